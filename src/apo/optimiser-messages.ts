/**
 * @module What the optimiser LLM is asked, as chat messages: the critique of a prompt from its lowest-reward rollouts
 * (the "textual gradient"), the request for edited prompts as JSON, and the retry message that names what was wrong
 * with the previous answer. Pure text building.
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

/**
 * The critique request: the prompt and the rollouts that scored lowest with it.
 * @param prompt - the beam prompt
 * @param traces - its lowest-reward minibatch rollouts
 * @returns system + user messages
 */
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

/**
 * The edit request: the prompt, its critique, and the answer format.
 * @param prompt - the beam prompt
 * @param critique - the optimiser's critique of it
 * @param count - prompts to propose
 * @param maxChars - longest prompt accepted (chars)
 * @returns system + user messages
 */
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

/**
 * The messages of a retry: the first request, the rejected answer, and what was wrong with it.
 * @param messages - the first request
 * @param answer - the rejected answer ("" when the request itself failed)
 * @param problems - what was wrong
 * @param rule - the format rule to repeat (empty for a critique)
 * @returns the messages to send again
 */
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

/**
 * The format rule of an edit request, for {@link retryMessages}.
 * @param count - prompts to propose
 * @param maxChars - longest prompt accepted (chars)
 */
export function editFormatRule(count: number, maxChars: number): string {
  return formatRule(count, maxChars);
}
