/** @module Reading the judge's verdict from its reply: a score in range, or a full ranking of the group's labels. */
import { answerLabel } from "./prompts.js";

/** A verdict, or why the reply has none. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The last line matching `KEY: …` (case-insensitive, markdown emphasis allowed), or null. */
function lastVerdictLine(text: string, key: string): string | null {
  const pattern = new RegExp(`^[\\s*_#>-]*${key}[\\s*_]*:[\\s*_]*(.+?)[\\s*_.]*$`, "i");
  const lines = text.split("\n").reverse();
  for (const line of lines) {
    const match = pattern.exec(line.trim());
    if (match) return match[1] as string;
  }
  return null;
}

/**
 * The score of a pointwise reply: the number on its last `SCORE:` line (`SCORE: 7`, `**Score:** 7/10`).
 * @param text - the judge's reply
 * @param minScore - lowest score allowed
 * @param maxScore - highest score allowed
 * @returns the score, or the problem (no score line — a refusal has none —, not a number, out of range)
 */
export function parseScore(text: string, minScore: number, maxScore: number): Parsed<number> {
  const value = lastVerdictLine(text, "score");
  if (value === null) return { ok: false, problem: "no SCORE: line in the reply" };
  const match = /^(-?\d+(?:\.\d+)?)(?:\s*\/\s*\d+(?:\.\d+)?)?$/.exec(value.trim());
  if (!match) return { ok: false, problem: `SCORE: ${JSON.stringify(value)} is not a number` };
  const score = Number(match[1]);
  if (score < minScore || score > maxScore) {
    return { ok: false, problem: `score ${score} outside ${minScore}..${maxScore}` };
  }
  return { ok: true, value: score };
}

/**
 * The ranking of a group reply: the labels on its last `RANKING:` line, best first (`RANKING: B > A > C`).
 * @param text - the judge's reply
 * @param count - answers in the group
 * @returns the answer indices, best first, or the problem (no line, unknown, repeated or missing labels)
 */
export function parseRanking(text: string, count: number): Parsed<number[]> {
  const value = lastVerdictLine(text, "ranking");
  if (value === null) return { ok: false, problem: "no RANKING: line in the reply" };
  const labels = Array.from({ length: count }, (_, i) => answerLabel(i));
  const given = value.split(/\s*(?:>|,)\s*/).map((label) =>
    label
      .trim()
      .replace(/^\[|\]$/g, "")
      .toUpperCase(),
  );
  const order: number[] = [];
  for (const label of given) {
    const index = labels.indexOf(label);
    if (index < 0) return { ok: false, problem: `unknown label ${JSON.stringify(label)} in the ranking` };
    if (order.includes(index)) return { ok: false, problem: `label ${label} ranked twice` };
    order.push(index);
  }
  if (order.length !== count) {
    const missing = labels.filter((_, i) => !order.includes(i));
    return { ok: false, problem: `the ranking leaves out ${missing.join(", ")}` };
  }
  return { ok: true, value: order };
}

/**
 * Rewards of a ranked group: best 1, worst 0, evenly spaced between (rank r of G gets 1 − r/(G−1)).
 * @param order - answer indices, best first, [group]
 * @returns reward of each answer in answer order, [group]; `[1]` for a group of one
 */
export function rankRewards(order: readonly number[]): number[] {
  const rewards_G = new Array<number>(order.length).fill(0);
  const last = Math.max(order.length - 1, 1);
  order.forEach((index, rank) => {
    rewards_G[index] = order.length === 1 ? 1 : 1 - rank / last;
  });
  return rewards_G;
}
