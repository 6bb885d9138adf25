/**
 * @module The flaky-lookup task, pure parts: which digits a rollout looks up, whether the flaky tool fails on a call
 * (a seeded draw per rollout and call), how one reply scores, and the rollout's reward. A rollout makes one model
 * call per lookup plus one per failed tool call (retries), so its call count varies from 1 to {@link MAX_CALLS} with
 * the luck of the tool, not with the input alone: rollouts of one group differ in calls and tokens.
 */
import { createHash } from "node:crypto";

/** Most model calls one rollout makes (lookups and retries together). */
export const MAX_CALLS = 8;
/** The tool fails this often on a call, independently of the reply (the agent then retries the lookup). */
export const TOOL_FAILURE_RATE = 0.45;
/** Bytes of a reply that are scored. */
export const SCORED_BYTES = 3;

/**
 * The digits to look up, from an input's `digits` string ("4 9 2").
 * @param digits - one to four digits separated by spaces
 * @returns the digits, in order
 * @throws {RangeError} when the string holds no digit or anything but digits and spaces
 */
export function lookupsOf(digits: string): number[] {
  if (!/^\s*\d(\s+\d)*\s*$/.test(digits))
    throw new RangeError(`digits must be digits separated by spaces, got "${digits}"`);
  return digits.trim().split(/\s+/).map(Number);
}

/**
 * Whether the flaky tool fails on a call: a draw from a hash of the rollout id and the call's index, so a retried
 * attempt of the same rollout sees the same failures.
 * @param rolloutId - the rollout's id
 * @param callIndex - 0-based index of the model call the tool call follows
 * @returns true with probability {@link TOOL_FAILURE_RATE}
 */
export function toolFails(rolloutId: string, callIndex: number): boolean {
  const digest = createHash("sha256").update(`${rolloutId}:${callIndex}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32 < TOOL_FAILURE_RATE;
}

/**
 * Score of the reply that a lookup of `digit` ended with, in [0, 1]: half for how many of its first
 * {@link SCORED_BYTES} characters are digits, half for starting with the digit asked for.
 * @param reply - the model's reply text
 * @param digit - the digit looked up
 * @returns 0.5 · (digits among the first 3 characters) / 3 + 0.5 · [first character is `digit`]
 */
export function scoreReply(reply: string, digit: number): number {
  const head = [...reply].slice(0, SCORED_BYTES);
  const digits = head.filter((c) => c >= "0" && c <= "9").length;
  return 0.5 * (digits / SCORED_BYTES) + 0.5 * (head[0] === String(digit) ? 1 : 0);
}

/**
 * The rollout's reward: the mean over its lookups of each lookup's score (a lookup the call budget did not reach
 * scores 0).
 * @param scores - score of each lookup reached, in order
 * @param lookups - number of lookups asked for (≥ 1)
 * @returns Σ scores / lookups
 */
export function rolloutReward(scores: readonly number[], lookups: number): number {
  return scores.reduce((a, b) => a + b, 0) / lookups;
}
