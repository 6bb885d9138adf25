/**
 * @module How a rollout's reward events become its rewards (`trainer.reward_policy`): one final reward, and per-call
 * rewards for events that name a model call. Several rewards per rollout are never merged silently: every policy
 * says which events count, and the events it sets aside are counted.
 */

/** `last`: the last reward event wins; `sum`: every event adds up; `per_call`: events naming a call go to it. */
export type RewardPolicy = "last" | "sum" | "per_call";

/** One valid reward event of a rollout. */
export interface RewardEvent {
  sequence: number;
  value: number;
  /** The call (or span) the reward names; absent for a rollout-level reward. */
  callId?: string;
}

/** The ids a reward's `call_id` may name for one call. */
export interface CallTarget {
  /** The call's own ids: event id, response `id`, the agent's request id. */
  callIds?: readonly string[];
  /** The span the call was made in, then its ancestors (nearest first). */
  spanIds?: readonly string[];
}

/** A rollout's rewards under a policy. */
export interface PolicyRewards {
  /** The final (rollout-level) reward, or null when no event gives one. */
  final: number | null;
  /** Reward of each call from events naming it (0 where none), [calls]; all zeros unless `per_call`. */
  callRewards: number[];
  /** Reward events that named a call, matched to one (`per_call` only). */
  attached: number;
  /** Reward events that named a call the rollout's usable calls do not include (`per_call` only; not used). */
  unmatched: number;
  /** Events set aside by `last` (every event before the last final one) and `per_call` (earlier final ones). */
  overridden: number;
}

/**
 * The call a reward names: the call carrying the id, else the last call made inside the span with that id.
 * @param callId - the reward's `call_id`
 * @param calls - the rollout's usable calls, in order
 * @returns the call's index, or -1
 */
export function findRewardTarget(callId: string, calls: readonly CallTarget[]): number {
  const own = calls.findIndex((call) => call.callIds?.includes(callId) === true);
  if (own >= 0) return own;
  for (let i = calls.length - 1; i >= 0; i--) if (calls[i]?.spanIds?.includes(callId) === true) return i;
  return -1;
}

/**
 * Applies a reward policy:
 * - `last`: final = the value of the last event by sequence (a `call_id` is ignored); earlier events are counted
 *   as `overridden`. This is the rule of Agent Lightning's triplet export.
 * - `sum`: final = Σ of every event's value (a `call_id` is ignored).
 * - `per_call`: an event with a `call_id` adds its value to that call's reward ({@link findRewardTarget}; `unmatched`
 *   when no usable call has the id, e.g. a failed call or another agent's); final = the last event without one.
 * @param events - the rollout's valid reward events, in sequence order
 * @param calls - the rollout's usable calls, in order
 * @param policy - see above
 * @returns the final reward (null when none), per-call rewards [calls] and the counts
 */
export function applyRewardPolicy(
  events: readonly RewardEvent[],
  calls: readonly CallTarget[],
  policy: RewardPolicy,
): PolicyRewards {
  const out: PolicyRewards = { final: null, callRewards: calls.map(() => 0), attached: 0, unmatched: 0, overridden: 0 };
  if (policy === "sum") {
    if (events.length > 0) out.final = events.reduce((sum, e) => sum + e.value, 0);
    return out;
  }
  let finals = 0;
  for (const event of events) {
    if (policy === "per_call" && event.callId !== undefined) {
      const target = findRewardTarget(event.callId, calls);
      if (target < 0) out.unmatched += 1;
      else {
        out.callRewards[target] = (out.callRewards[target] ?? 0) + event.value;
        out.attached += 1;
      }
      continue;
    }
    out.final = event.value;
    finals += 1;
  }
  out.overridden = Math.max(0, finals - 1);
  return out;
}
