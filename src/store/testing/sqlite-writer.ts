/**
 * @module A second OS process for `sqlite.test.ts`: opens the same SQLite file and writes to it while the test
 * process writes too. Run as `node --import tsx testing/sqlite-writer.ts DB ROLLOUT_ID COUNT TAG [crash]`.
 *
 * It prints `ready` once the store is open and waits for a line on stdin. Then it appends COUNT events one by one to
 * ROLLOUT_ID's attempt "0" (data `{tag, i}`, event ids `TAG-i`), printing `started` after the first; after every 10th
 * it also creates rollout `TAG-own-i` and fails it (a terminal cursor entry). Exits 0 when done; any error exits 1
 * with the stack on stderr. With `crash` it kills itself with SIGKILL once done, without closing the store.
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
