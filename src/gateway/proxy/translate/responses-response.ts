/**
 * @module vLLM chat completion → OpenAI Responses API `response` object: the answer's text becomes one `message`
 * output item (`output_text` part) and each tool call one `function_call` item whose `call_id` is vLLM's tool-call id;
 * `usage` is counted from the token ids; a `length` finish is `status: "incomplete"`.
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */
import { randomBytes } from "node:crypto";
import { isJson, type Json } from "./translation.js";

/** @returns `<prefix>_` and 48 hex chars, the shape of OpenAI's `resp_…`, `msg_…`, `fc_…` ids */
export function responsesId(prefix: "resp" | "msg" | "fc"): string {
  return `${prefix}_${randomBytes(24).toString("hex")}`;
}

/** The answer of one chat choice, in pieces. */
export interface ChatAnswer {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  promptTokens: number;
  outputTokens: number;
}

/** Reads the first choice of a `chat.completion` body. */
export function chatAnswerOf(chat: Json): ChatAnswer {
  const choice = Array.isArray(chat.choices) && isJson(chat.choices[0]) ? chat.choices[0] : {};
  const message = isJson(choice.message) ? choice.message : {};
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const usage = isJson(chat.usage) ? chat.usage : {};
  const promptIds = Array.isArray(chat.prompt_token_ids) ? chat.prompt_token_ids.length : 0;
  const outputIds = Array.isArray(choice.token_ids) ? choice.token_ids.length : 0;
  return {
    content: typeof message.content === "string" ? message.content : null,
    toolCalls: calls.filter(isJson).map((call) => {
      const fn = isJson(call.function) ? call.function : {};
      return { id: String(call.id ?? ""), name: String(fn.name ?? ""), arguments: String(fn.arguments ?? "") };
    }),
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    promptTokens: typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : promptIds,
    outputTokens: typeof usage.completion_tokens === "number" ? usage.completion_tokens : outputIds,
  };
}

/** Ids of one response and its output items, fixed when the call starts so a stream and its final object agree. */
export class ResponsesIds {
  /** The `resp_…` id. */
  readonly responseId = responsesId("resp");
  /** The `msg_…` id of the text output item. */
  readonly messageId = responsesId("msg");
  private readonly callItemIds: string[] = [];

  /** @returns the `fc_…` item id of the k-th tool call */
  callItemId(k: number): string {
    while (this.callItemIds.length <= k) this.callItemIds.push(responsesId("fc"));
    return this.callItemIds[k]!;
  }
}

/** A `message` output item. */
export function messageItem(id: string, text: string, status: "in_progress" | "completed"): Json {
  const content = status === "completed" ? [outputTextPart(text)] : [];
  return { id, type: "message", status, content, role: "assistant" };
}

/** An `output_text` content part. */
export function outputTextPart(text: string): Json {
  return { type: "output_text", annotations: [], logprobs: [], text };
}

/** A `function_call` output item. */
export function functionCallItem(
  id: string,
  call: { id: string; name: string; arguments: string },
  status: "in_progress" | "completed",
): Json {
  return { id, type: "function_call", status, arguments: call.arguments, call_id: call.id, name: call.name };
}

/** The output items of an answer: the text (unless null, or empty beside tool calls), then one item per tool call. */
export function outputItems(answer: ChatAnswer, ids: ResponsesIds): Json[] {
  const items: Json[] = [];
  if (answer.content !== null && (answer.content !== "" || answer.toolCalls.length === 0)) {
    items.push(messageItem(ids.messageId, answer.content, "completed"));
  }
  answer.toolCalls.forEach((call, k) => {
    items.push(functionCallItem(ids.callItemId(k), call, "completed"));
  });
  return items;
}

/**
 * The `response` object.
 * @param request - the agent's Responses body (echoed fields: instructions, tools, tool_choice, …)
 * @param ids - the response's ids
 * @param model - the model name the upstream answered with
 * @param createdAt - epoch seconds
 * @param answer - the finished answer; null for the `in_progress` object of `response.created`
 */
export function responseObject(
  request: Json,
  ids: ResponsesIds,
  model: unknown,
  createdAt: number,
  answer: ChatAnswer | null,
): Json {
  const incomplete = answer?.finishReason === "length";
  const usage = answer && {
    input_tokens: answer.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: answer.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: answer.promptTokens + answer.outputTokens,
  };
  return {
    id: ids.responseId,
    object: "response",
    created_at: createdAt,
    status: answer === null ? "in_progress" : incomplete ? "incomplete" : "completed",
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model,
    output: answer ? outputItems(answer, ids) : [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: request.store ?? true,
    temperature: request.temperature ?? null,
    text: request.text ?? { format: { type: "text" } },
    tool_choice: request.tool_choice ?? "auto",
    tools: request.tools ?? [],
    top_p: request.top_p ?? null,
    truncation: "disabled",
    usage,
    user: request.user ?? null,
    metadata: request.metadata ?? {},
  };
}

/** The chat message that an answer adds to the conversation (what a chat client sends back next turn). */
export function assistantMessage(answer: ChatAnswer): Json {
  if (answer.toolCalls.length === 0) return { role: "assistant", content: answer.content ?? "" };
  const toolCalls = answer.toolCalls.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
  const content = answer.content === "" ? null : answer.content;
  return { role: "assistant", content, tool_calls: toolCalls };
}
