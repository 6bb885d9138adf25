/**
 * @module `TrainingRow`, the trainer's unit of training data (a prompt and a response region with its loss mask), and
 * its conversion to the engine's `TrainRow` once an advantage and loss weights are attached.
 */
import type { TrainRow } from "../engine/engine.js";
import { broadcastAdvantage } from "./group-advantage.js";

/**
 * One training sequence built from one or more model calls of a rollout. Every response-region array is [R]
 * (R = `responseTokenIds.length`): the model's own tokens carry mask 1; context between merged calls (tool results,
 * template separators) carries mask 0 and a null logprob.
 */
export interface TrainingRow {
  rolloutId: string;
  /** Group id shared by the rollouts of one input. */
  dataId: string;
  /** Prompt of the row's first call, [P]. */
  promptTokenIds: number[];
  /** Everything after the prompt: responses and the context between them, [R]. */
  responseTokenIds: number[];
  /** 1 on tokens the model generated (trained on), 0 on context, [R]. */
  lossMask: number[];
  /** Sampling-time logprob (nats) of each response-region token, [R]; null on context and where not recorded. */
  oldLogprobs: (number | null)[];
  /** Distinct policy versions that produced this row's responses, ascending. */
  policyVersions: number[];
  /** Turns (usable-call indices) merged into this row, ascending. */
  turns: number[];
  /** The agent whose calls make this row (a row never merges calls of two named agents); absent when none named. */
  agentName?: string;
  /**
   * Turn of each response-region token, −1 on context, [R]; set by trajectory aggregation (per-call credit needs
   * it when a row merges several calls). Absent: every token belongs to `turns[0]`.
   */
  tokenTurns?: number[];
}

/** A training row with what the loss needs on top: its advantage and optional weights. */
export interface ScoredRow extends TrainingRow {
  /** The rollout-level advantage broadcast onto this row's mask-1 tokens. */
  advantage: number;
  /**
   * Per-token advantages, [R] (0 off the mask), when they differ between the calls merged into the row (per-call
   * credit, see credit.ts); they replace `advantage` for the engine. Absent: `advantage` on every mask-1 token.
   */
  tokenAdvantages?: number[];
  /** Loss weight of each of this row's masked tokens under `weighted` aggregation; absent for token-mean. */
  weight?: number;
  /** Truncated importance-sampling weight per response-region token, [R]; absent when not used. */
  isWeights?: number[];
}

/**
 * Counts the tokens a row trains on.
 * @param row - any row
 * @returns Σ lossMask (tokens)
 */
export function trainableTokens(row: Pick<TrainingRow, "lossMask">): number {
  let count = 0;
  for (const m of row.lossMask) count += m;
  return count;
}

/**
 * Converts a scored row to the engine's `TrainRow` over prompt ⧺ response region ([T] = [P + R]). Advantages sit on
 * mask-1 positions only. `oldLogprobs` is passed only when every mask-1 position has one (else the engine treats the
 * row as on-policy); unmasked positions get 0, which the engine ignores.
 * @param row - a scored row
 * @returns the engine row; `weight` and `isWeights` present only when set on `row`
 */
export function toEngineRow(row: ScoredRow): TrainRow {
  // concat, not spread: rows carry thousands of prompt tokens and spread into a literal is several times slower.
  const zeros = new Array<number>(row.promptTokenIds.length).fill(0);
  const engineRow: TrainRow = {
    tokenIds: row.promptTokenIds.concat(row.responseTokenIds),
    lossMask: zeros.concat(row.lossMask),
    advantages: zeros.concat(row.tokenAdvantages ?? broadcastAdvantage(row.lossMask, row.advantage)),
  };
  const known = row.lossMask.every((m, i) => m === 0 || row.oldLogprobs[i] !== null);
  if (known) engineRow.oldLogprobs = zeros.concat(row.oldLogprobs.map((lp) => lp ?? 0));
  if (row.weight !== undefined) engineRow.weight = row.weight;
  if (row.isWeights !== undefined) {
    engineRow.isWeights = new Array<number>(row.promptTokenIds.length).fill(1).concat(row.isWeights);
  }
  return engineRow;
}
