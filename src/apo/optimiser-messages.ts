/**
 * @module The optimiser LLM's chat messages: critique (the "textual gradient"), edit request, and retry. Pure.
 * @see Pryzant et al., "Automatic Prompt Optimization with 'Gradient Descent' and Beam Search", arXiv:2305.03495
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";

/** One rollout shown to the optimiser. */
export interface Trace {
  /** The rollout's input (JSON, cut to the trace limit). */
  input: string;
  /** What the agent's model answered last (text and tool calls, cut), or why the rollout failed. */
  output: string;
  /** Final reward. */
  reward: number;
}

/** Marks the critique request's system message (a scripted optimiser tells the two requests apart by it). */
export const CRITIQUE_MARK = "[arclight-apo:critique]";
/** Marks the edit request's system message. */
export const EDIT_MARK = "[arclight-apo:edit]";

const CRITIQUE_SYSTEM =
  `${CRITIQUE_MARK} You improve the system prompt of an AI agent. You are shown the current prompt and runs of the ` +
  "agent that got a low reward with it. Explain briefly and concretely why the prompt led to these results and what " +
  "it should say instead. Do not write the new prompt yet.";

/** The prompt, fenced so that its own text cannot be read as instructions to the optimiser. */
function promptBlock(prompt: string): string {
  return `## Current prompt\n<prompt>\n${prompt}\n</prompt>`;
}

/** The critique request: the prompt and its lowest-reward rollouts. */
export function critiqueMessages(prompt: string, traces: readonly Trace[]): ChatCompletionMessageParam[] {
  const runs = traces.map(
    (t, i) => `### Run ${i + 1}: reward ${t.reward.toFixed(3)}\nInput: ${t.input}\nAgent output: ${t.output}`,
  );
  return [
    { role: "system", content: CRITIQUE_SYSTEM },
    { role: "user", content: `${promptBlock(prompt)}\n\n## Low-reward runs\n${runs.join("\n\n")}` },
  ];
}

/** The answer format the edit request asks for, repeated in the retry message. */
function formatRule(count: number, maxChars: number): string {
  return (
    `Answer with JSON only, exactly {"prompts": ["...", ...]} holding ${count} new prompt${count === 1 ? "" : "s"}, ` +
    `each different from the current prompt and from each other, each at most ${maxChars} characters.`
  );
}

/** The edit request: the prompt, its critique, and the answer format. */
export function editMessages(
  prompt: string,
  critique: string,
  count: number,
  maxChars: number,
): ChatCompletionMessageParam[] {
  const system = `${EDIT_MARK} You rewrite the system prompt of an AI agent to fix the problems a critique found. ${formatRule(count, maxChars)}`;
  return [
    { role: "system", content: system },
    { role: "user", content: `${promptBlock(prompt)}\n\n## Critique\n${critique}\n\n${formatRule(count, maxChars)}` },
  ];
}

/** A retry: the first request, the rejected answer ("" if the request failed), and what was wrong. */
export function retryMessages(
  messages: readonly ChatCompletionMessageParam[],
  answer: string,
  problems: readonly string[],
  rule: string,
): ChatCompletionMessageParam[] {
  if (answer === "") return [...messages];
  const fix = `Your answer was rejected: ${problems.join("; ")}. ${rule}`.trim();
  return [...messages, { role: "assistant", content: answer }, { role: "user", content: fix }];
}

/** The format rule of an edit request, repeated by {@link retryMessages}. */
export function editFormatRule(count: number, maxChars: number): string {
  return formatRule(count, maxChars);
}
