/**
 * @module Validation: one `is_train=false` rollout per validation input, run with the current policy, and the mean
 * of their final rewards (a failed rollout or one without a reward counts as `reward_fillna_value`). Rollout ids are
 * `NAME-vSTEP-dINDEX-0` ({@link validationRolloutIds}).
 */
import type { GatewayClient } from "../gateway/client.js";
import type { TrainerConfig } from "./config.js";
import type { DataItem } from "./data-order.js";
import type { GroupTracker } from "./rollout-groups.js";
import { rolloutOnceId, runRolloutsOnce } from "./rollouts-once.js";

/** Where validation runs. */
export interface ValidationContext {
  config: Readonly<TrainerConfig>;
  /** Step just completed (names the rollouts: `NAME-vSTEP-dINDEX-0`). */
  step: number;
  policyVersion: number;
  /** Interval between gateway polls (ms). */
  pollMs: number;
  /** Aborting it makes the wait reject with the signal's reason. */
  signal?: AbortSignal;
}

/** The rollout id prefix of the validation after `step`: `NAME-vSTEP`. */
function validationPrefix(runName: string, step: number): string {
  return `${runName}-v${step}`;
}

/**
 * The ids of the validation rollouts run after `step`, so a caller can read back a validation the loop ran.
 * @param runName - the trainer config's `name`
 * @param step - the step the validation followed
 * @param valData - the validation inputs
 * @returns `NAME-vSTEP-dINDEX-0` per input, input order
 */
export function validationRolloutIds(runName: string, step: number, valData: readonly DataItem[]): string[] {
  return valData.map((item) => rolloutOnceId(validationPrefix(runName, step), item.index));
}

/** One validation rollout, as the validation table shows it. */
export interface ValidationRow {
  rolloutId: string;
  /** The input's index in the validation file. */
  dataIndex: number;
  input: unknown;
  /** Final reward (`reward_fillna_value` for a failed rollout or one without a reward). */
  reward: number;
  failed: boolean;
}

/** What one validation pass gave. */
export interface ValidationResult {
  rewardMean: number;
  /** One row per validation input, input order. */
  rows: ValidationRow[];
}

/**
 * Runs one validation pass and waits for every rollout.
 * @param client - gateway client
 * @param tracker - the loop's tracker (validation rollouts are tracked, then forgotten)
 * @param valData - validation inputs
 * @param context - config, step, version, poll interval
 * @returns the mean final reward and each rollout's row, or null without validation inputs
 */
export async function runValidation(
  client: GatewayClient,
  tracker: GroupTracker,
  valData: readonly DataItem[],
  context: ValidationContext,
): Promise<ValidationResult | null> {
  if (valData.length === 0) return null;
  const { config, step } = context;
  const { rewards, failedIds } = await runRolloutsOnce(client, valData, {
    prefix: validationPrefix(config.name, step),
    isTrain: false,
    config,
    policyVersion: context.policyVersion,
    batchIdx: step,
    tracker,
    pollMs: context.pollMs,
    ...(context.signal ? { signal: context.signal } : {}),
  });
  const ids = validationRolloutIds(config.name, step, valData);
  const failed = new Set(failedIds);
  const rows = valData.map((item, i) => ({
    rolloutId: ids[i]!,
    dataIndex: item.index,
    input: item.input,
    reward: rewards[i]!,
    failed: failed.has(ids[i]!),
  }));
  return { rewardMean: rewards.reduce((a, b) => a + b, 0) / rewards.length, rows };
}
