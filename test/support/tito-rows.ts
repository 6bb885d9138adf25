/**
 * @module The trajectory rows the trainer would build from one rollout's recorded calls (the triplet view, then
 * trajectory aggregation), for `tito` tests and the tito bench.
 */
import { toTripletEvents } from "../../src/protocol/index.js";
import type { Store } from "../../src/store/store.js";
import type { AggregateResult } from "../../src/trainer/aggregate-result.js";
import { aggregateTrajectories } from "../../src/trainer/aggregate-trajectory.js";
import { extractTriplets } from "../../src/trainer/triplets.js";

/**
 * Aggregates a rollout's recorded calls into trajectory rows, without length limits.
 * @param store - the gateway's store
 * @param rolloutId - the rollout
 * @returns the rows and the prefix mismatches that split them
 */
export async function trajectoryRows(store: Store, rolloutId: string): Promise<AggregateResult> {
  const events = toTripletEvents(await store.listEvents(rolloutId), "retries");
  const triplets = extractTriplets(rolloutId, rolloutId, events, 0);
  return aggregateTrajectories(triplets, { maxPromptLength: 1e9, maxResponseLength: 1e9 });
}
