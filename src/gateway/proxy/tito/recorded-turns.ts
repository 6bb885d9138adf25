/**
 * @module The `tito` record of a call (the `tito` field of its `model_request` event: how its prompt was built, the
 * agent's conversation and the answer given) and the attempt's earlier calls read back from the store as
 * {@link RecordedTurn}s.
 */
import type { Store } from "../../../store/store.js";
import type { PromptPlan, RecordedTurn } from "./prompt-plan.js";

type Json = Record<string, unknown>;

/** The `tito` field of a `model_request` event. */
export interface TitoRecord {
  /** `prefix` (a recorded turn reused) or `full` (whole conversation rendered). */
  path: PromptPlan["path"];
  /** Ids taken from the reused turn: `prompt_token_ids[0, prefix_end)`; 0 on the full path. */
  prefix_end: number;
  /** Messages of the request the reused turn covered; 0 on the full path. */
  prefix_messages: number;
  /** The reused turn's event sequence. */
  matched_sequence?: number;
  /** Why the full path was taken. */
  reason?: string;
  /** True when the request matched only after its regrouped tool turns were made sequential again. */
  regrouped?: boolean;
  /**
   * The agent's conversation: `messages`, `tools`, `chat_template_kwargs` as sent (in sequential form when
   * `regrouped`: what later calls are matched against).
   */
  chat: { messages: Json[]; tools?: Json[]; chat_template_kwargs?: Json };
  /** The assistant message the agent was answered with. */
  answer: Json;
}

/**
 * The event's `tito` field.
 * @param plan - how the prompt was built
 * @param answer - the assistant message answered
 */
export function titoRecord(plan: PromptPlan, answer: Json): TitoRecord {
  const chat = plan.chat;
  const record: TitoRecord = {
    path: plan.path,
    prefix_end: plan.prefixEnd,
    prefix_messages: plan.prefixMessages,
    chat: {
      messages: [...chat.messages],
      ...(chat.tools ? { tools: [...chat.tools] } : {}),
      ...(chat.templateKwargs ? { chat_template_kwargs: chat.templateKwargs } : {}),
    },
    answer,
  };
  if (plan.matchedSequence !== undefined) record.matched_sequence = plan.matchedSequence;
  if (plan.reason !== undefined) record.reason = plan.reason;
  if (plan.regrouped) record.regrouped = true;
  return record;
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function ids(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v)) ? (value as number[]) : undefined;
}

/** A usable earlier call: ok, ids captured, a `tito` record; otherwise undefined. */
function turnOf(sequence: number, data: Json): RecordedTurn | undefined {
  const tito = data.tito;
  if (data.status !== "ok" || !isJson(tito) || !isJson(tito.chat) || !isJson(tito.answer)) return undefined;
  const reasons = Array.isArray(data.capture_incomplete_reasons) ? data.capture_incomplete_reasons : [];
  if (reasons.some((r) => !String(r).startsWith("logprobs_"))) return undefined;
  const choices = isJson(data.response) && Array.isArray(data.response.choices) ? data.response.choices : [];
  const choice = isJson(choices[0]) ? choices[0] : {};
  const promptIds = ids(choice.prompt_token_ids);
  const responseIds = ids(choice.token_ids);
  const chat = tito.chat as TitoRecord["chat"];
  if (!promptIds || !responseIds || !Array.isArray(chat.messages)) return undefined;
  return {
    sequence,
    chat: { messages: chat.messages, tools: chat.tools, templateKwargs: chat.chat_template_kwargs },
    answer: tito.answer,
    promptIds,
    responseIds,
  };
}

/**
 * The attempt's earlier `tito` calls that can be reused.
 * @param store - the gateway's store
 * @param rolloutId - the rollout
 * @param attemptId - the attempt (turns of other attempts are never reused)
 */
export async function recordedTurns(store: Store, rolloutId: string, attemptId: string): Promise<RecordedTurn[]> {
  const events = await store.listEvents(rolloutId, { attemptId, eventType: "model_request" });
  const turns: RecordedTurn[] = [];
  for (const event of events) {
    const turn = isJson(event.data) ? turnOf(event.sequence, event.data) : undefined;
    if (turn) turns.push(turn);
  }
  return turns;
}
