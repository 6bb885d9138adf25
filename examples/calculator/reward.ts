/**
 * @module Reward of the calculator agent: 1 for the exact answer, plus a small shaping term for the right format
 * and for using the tool when the answer is wrong.
 */

/** Reward for an `ANSWER:` line whose number equals the expected answer. */
export const CORRECT_REWARD = 1.0;
/** Reward for a well-formed `ANSWER: <number>` line whose number is wrong. */
export const FORMAT_REWARD = 0.1;
/** Added to a wrong (or missing) answer when the calculator was called and returned a number. */
export const TOOL_REWARD = 0.1;

/** Matches one well-formed answer line: `ANSWER:`, optional blanks, a decimal number, nothing else. */
const ANSWER_LINE = /^ANSWER:[ \t]*(-?\d+(?:\.\d+)?)[ \t]*$/;

/**
 * Reads the answer from a final assistant message: the number of its last well-formed `ANSWER: <number>` line.
 * @param content - the message text (null when the message had none)
 * @returns the number, or undefined when no line is well-formed
 */
export function parseAnswer(content: string | null | undefined): number | undefined {
  if (!content) return undefined;
  let answer: number | undefined;
  for (const line of content.split("\n")) {
    const match = ANSWER_LINE.exec(line.trim());
    if (match) answer = Number(match[1]);
  }
  return answer;
}

/** What one finished conversation offers the reward. */
export interface RewardInput {
  /** Text of the last assistant message (null when it had none, e.g. it only called a tool). */
  finalContent: string | null | undefined;
  /** The exact expected answer. */
  expected: number;
  /** True when at least one calculator call returned a number (not an `error: …`). */
  toolUsed: boolean;
}

/** A reward value with its reason, ready for a `reward` event. */
export interface RewardResult {
  /** In [0, 1]. */
  value: number;
  /** `correct`, `wrong`, or `no_answer`. */
  reason: "correct" | "wrong" | "no_answer";
  /** The parsed answer, when there was one. */
  answer?: number;
}

/**
 * Scores one conversation:
 * | outcome | reward |
 * |---|---|
 * | last `ANSWER: n` line has n equal to the expected answer (numerically: `33.0` = `33`) | 1.0 |
 * | a well-formed `ANSWER: n` line with a wrong n | 0.1, + 0.1 if the tool was used successfully |
 * | no well-formed `ANSWER:` line | 0, + 0.1 if the tool was used successfully |
 * The shaping terms stay well below the correct reward, so a policy cannot score by format alone; they give RL a
 * gradient toward the format and the tool call early on.
 * @param input - final message, expected answer, whether the tool was used
 * @returns the value in [0, 1] and its reason
 */
export function computeReward(input: RewardInput): RewardResult {
  const answer = parseAnswer(input.finalContent);
  const toolTerm = input.toolUsed ? TOOL_REWARD : 0;
  if (answer === undefined) return { value: toolTerm, reason: "no_answer" };
  if (answer === input.expected) return { value: CORRECT_REWARD, reason: "correct", answer };
  return { value: FORMAT_REWARD + toolTerm, reason: "wrong", answer };
}
