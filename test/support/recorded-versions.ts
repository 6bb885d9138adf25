/** @module The policy versions a gateway recorded on its model calls, read back from its SQLite store. */
import { SqliteStore } from "../../src/store/sqlite.js";

/**
 * The `server.version` of every `model_request` event in a gateway's SQLite file, over all its rollouts.
 * @param dbPath - the gateway's database, e.g. runs/NAME/gateway.db
 * @returns the versions, in no particular order
 */
export async function recordedVersions(dbPath: string): Promise<number[]> {
  const store = SqliteStore.open(dbPath);
  try {
    const recorded: number[] = [];
    for (const rollout of await store.listRollouts()) {
      for (const event of await store.listEvents(rollout.rollout_id)) {
        if (event.event_type !== "model_request") continue;
        recorded.push((event.data as { server: { version: number } }).server.version);
      }
    }
    return recorded;
  } finally {
    await store.close();
  }
}
