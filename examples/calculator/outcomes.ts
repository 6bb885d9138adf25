/**
 * @module What went wrong in one calculator rollout, read from its recorded events: the answer was right, or the
 * model skipped the tool, miscopied the question into the tool call, miscopied the tool's result into its answer, or
 * gave no answer after the tool. `bench/demo-errors.ts` counts these over a demo's validation rollouts.
 */
import { CALCULATOR_TOOL_NAME } from "./calculator-tool.js";

/** The kinds of outcome, in the order `bench/demo-errors.ts` prints them. */
export const OUTCOME_KINDS = [
  "correct",
  "no tool call",
  "tool call miscopies the question",
  "answer miscopies the tool result",
  "no answer after the tool result",
  "other",
] as const;

/** One kind from {@link OUTCOME_KINDS}. */
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

/** The parts of a stored event the classification reads (`event_type`, and `data` as the gateway stored it). */
export interface RecordedEvent {
  event_type: string;
  data: unknown;
}

/** The first choice's message of a `model_request` event's response, or undefined. */
function replyOf(data: unknown): { content?: unknown; tool_calls?: unknown } | undefined {
  const choices = (data as { response?: { choices?: unknown } } | null)?.response?.choices;
  if (!Array.isArray(choices)) return undefined;
  const message = (choices[0] as { message?: unknown } | undefined)?.message;
  return typeof message === "object" && message !== null ? message : undefined;
}

/** The `expression` of the last calculator call among the replies, or null for a malformed one; undefined: no call. */
function lastExpression(requests: readonly unknown[]): string | null | undefined {
  let expression: string | null | undefined;
  for (const data of requests) {
    const calls = replyOf(data)?.tool_calls;
    if (!Array.isArray(calls)) continue;
    for (const call of calls as { function?: { name?: unknown; arguments?: unknown } }[]) {
      if (call.function?.name !== CALCULATOR_TOOL_NAME) continue;
      try {
        const args = JSON.parse(String(call.function.arguments)) as { expression?: unknown };
        expression = typeof args.expression === "string" ? args.expression : null;
      } catch {
        expression = null;
      }
    }
  }
  return expression;
}

/** Whether the last request sent a tool result back to the model (a message with role `tool`). */
function sawToolResult(requests: readonly unknown[]): boolean {
  const last = requests.at(-1) as { request?: { messages?: unknown } } | undefined;
  const messages = last?.request?.messages;
  return Array.isArray(messages) && messages.some((m) => (m as { role?: unknown }).role === "tool");
}

/**
 * Classifies one rollout of the calculator agent.
 * @param question - the rollout's question, as the agent sent it (`input.question`)
 * @param events - the rollout's events in order: its `model_request` events and its `reward` event
 *   (`data.reason`: `correct`, `wrong` for a well-formed wrong answer, or `no_answer`; examples/calculator/reward.ts)
 * @returns the outcome; `other` when there is no reward event or no model call
 */
export function classifyOutcome(question: string, events: readonly RecordedEvent[]): OutcomeKind {
  const reward = events.find((e) => e.event_type === "reward")?.data as
    | { value?: unknown; reason?: unknown }
    | undefined;
  const requests = events.filter((e) => e.event_type === "model_request").map((e) => e.data);
  if (reward === undefined || requests.length === 0) return "other";
  if (reward.reason === "correct") return "correct";
  const expression = lastExpression(requests);
  if (expression === undefined) return "no tool call";
  if (expression === null) return "other";
  const compact = (text: string) => text.replace(/\s+/g, "");
  if (compact(expression) !== compact(question)) return "tool call miscopies the question";
  if (!sawToolResult(requests)) return "other";
  return reward.reason === "wrong" ? "answer miscopies the tool result" : "no answer after the tool result";
}
