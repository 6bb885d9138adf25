/**
 * @module The agent's chat answer to a `tito` call: the upstream's `/completions` answer (text, ids, logprobs) as
 * vLLM's `chat.completion` body (tool calls parsed by the model's parser), or as the `chat.completion.chunk` events
 * of a stream carrying the same answer.
 * @see vLLM v0.19 `ChatCompletionResponse` / `ChatCompletionStreamResponse` (`chat_completion/protocol.py`)
 */

import { vllmAssistantMessage } from "../../../protocol/assistant-message.js";
import type { ToolParserName } from "../../../protocol/index.js";
import { type ChatTool, toolCallParser } from "../../../wire/tool-calls.js";

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The first choice of a `/completions` body, or `{}`.
 * @param completion - the upstream body
 */
export function firstChoice(completion: Json): Json {
  return (Array.isArray(completion.choices) && isJson(completion.choices[0]) ? completion.choices[0] : {}) as Json;
}

/** Content and tool calls of generated text under a parser. */
function parseText(
  text: string,
  parser: ToolParserName,
  tools: readonly ChatTool[],
): { content: string | null; toolCalls: Json[] } {
  if (parser === "none") return { content: text, toolCalls: [] };
  const parsed = toolCallParser(parser).parse(text, tools);
  return { content: parsed.content, toolCalls: parsed.toolCalls as unknown as Json[] };
}

/** Completions logprobs (`tokens`, `token_logprobs`) as chat `logprobs.content` entries; null when absent. */
function chatLogprobs(logprobs: unknown): Json | null {
  if (!isJson(logprobs) || !Array.isArray(logprobs.tokens) || !Array.isArray(logprobs.token_logprobs)) return null;
  const values = logprobs.token_logprobs as unknown[];
  const content = (logprobs.tokens as unknown[]).map((token, i) => ({
    token,
    logprob: values[i],
    bytes: [...Buffer.from(String(token), "utf8")],
    top_logprobs: [],
  }));
  return { content };
}

/**
 * The `chat.completion` body answering the agent.
 * @param completion - the upstream's non-stream `/completions` body (one choice)
 * @param parser - how tool calls are written in the text
 * @param agentWantsLogprobs - whether the agent asked for `logprobs: true`
 * @param text - the generated text to parse (default: the choice's `text`)
 * @param tools - the agent's `tools` (`qwen3_coder` types parameter values by their schema)
 * @returns vLLM's chat shape: message (content, tool_calls), finish_reason (`tool_calls` when calls parsed),
 *   `token_ids`, top-level `prompt_token_ids`, usage
 */
export function chatAnswer(
  completion: Json,
  parser: ToolParserName,
  agentWantsLogprobs: boolean,
  text?: string,
  tools: readonly ChatTool[] = [],
): Json {
  const choice = firstChoice(completion);
  const generated = text ?? (typeof choice.text === "string" ? choice.text : "");
  const { content, toolCalls } = parseText(generated, parser, tools);
  const message = vllmAssistantMessage(content, toolCalls);
  const id = String(completion.id ?? "").replace(/^cmpl-/, "");
  return {
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message,
        logprobs: agentWantsLogprobs ? chatLogprobs(choice.logprobs) : null,
        finish_reason: toolCalls.length > 0 ? "tool_calls" : (choice.finish_reason ?? null),
        stop_reason: choice.stop_reason ?? null,
        token_ids: choice.token_ids ?? null,
      },
    ],
    service_tier: null,
    system_fingerprint: null,
    usage: completion.usage ?? null,
    prompt_logprobs: null,
    prompt_token_ids: choice.prompt_token_ids ?? null,
    kv_transfer_params: null,
  };
}

/**
 * The same answer as stream events (the data of each `data:` line, `[DONE]` not included): a role chunk with
 * `prompt_token_ids`, one content chunk, one chunk per tool call (whole arguments), the finishing chunk with
 * `token_ids`, and a usage chunk when `includeUsage`.
 * @param chat - a body from {@link chatAnswer}
 * @param includeUsage - the agent's `stream_options.include_usage`
 */
export function chatChunks(chat: Json, includeUsage: boolean): Json[] {
  const head = { id: chat.id, object: "chat.completion.chunk", created: chat.created, model: chat.model };
  const choice = (chat.choices as Json[])[0]!;
  const message = choice.message as Json;
  const one = (fields: Json) => ({ ...head, choices: [{ index: 0, logprobs: null, finish_reason: null, ...fields }] });
  const chunks: Json[] = [
    { ...one({ delta: { role: "assistant", content: "" } }), prompt_token_ids: chat.prompt_token_ids },
  ];
  if (typeof message.content === "string" && message.content !== "") {
    chunks.push(one({ delta: { content: message.content }, logprobs: choice.logprobs }));
  }
  (message.tool_calls as Json[]).forEach((call, index) => {
    chunks.push(one({ delta: { tool_calls: [{ index, ...call }] } }));
  });
  const end = { delta: {}, finish_reason: choice.finish_reason, stop_reason: choice.stop_reason };
  chunks.push(one({ ...end, token_ids: choice.token_ids }));
  if (includeUsage && chat.usage) chunks.push({ ...head, choices: [], usage: chat.usage });
  return chunks;
}
