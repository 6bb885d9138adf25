/**
 * @module The trajectory rows the trainer would build from one rollout's recorded calls (the triplet view, then
 * trajectory aggregation), for `tito` tests and the tito bench.
 */
import { toTripletEvents } from "../../../../protocol/index.js";
import type { Store } from "../../../../store/store.js";
import type { AggregateResult } from "../../../../trainer/aggregate-result.js";
import { aggregateTrajectories } from "../../../../trainer/aggregate-trajectory.js";
import { extractTriplets } from "../../../../trainer/triplets.js";

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
