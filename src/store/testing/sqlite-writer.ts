/**
 * @module A second process writing the same SQLite file: `node --import tsx testing/sqlite-writer.ts DB ROLLOUT_ID
 * COUNT TAG [crash]`. Prints `ready`, waits for a stdin line, appends COUNT events (ids `TAG-i`, `started` after the
 * first), fails a rollout `TAG-own-i` every 10th; `crash` SIGKILLs itself at the end.
 */
import { once } from "node:events";
import { EventCreateSchema, RolloutCreateSchema } from "../../protocol/index.js";
import { SqliteStore } from "../sqlite.js";

async function main(): Promise<void> {
  const [dbPath, rolloutId, countText, tag, mode] = process.argv.slice(2);
  if (!dbPath || !rolloutId || !countText || !tag) throw new Error("usage: DB ROLLOUT_ID COUNT TAG");
  const store = SqliteStore.open(dbPath);
  process.stdout.write("ready\n");
  await once(process.stdin, "data");
  for (let i = 0; i < Number(countText); i++) {
    const event = EventCreateSchema.parse({ event_type: "log", data: { tag, i }, event_id: `${tag}-${i}` });
    await store.appendEvents(rolloutId, "0", [event]);
    if (i === 0) process.stdout.write("started\n");
    if (i % 10 === 0) {
      const own = RolloutCreateSchema.parse({ rollout_id: `${tag}-own-${i}`, input: { i } });
      await store.createRollouts([own]);
      await store.patchRollout(own.rollout_id!, { status: { state: "failed" } });
    }
  }
  if (mode === "crash") process.kill(process.pid, "SIGKILL");
  await store.close();
  process.stdin.destroy();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
