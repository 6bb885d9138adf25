/**
 * @module The agent's chat answer to a `tito` call: the upstream's `/completions` answer (text, ids, logprobs) as
 * vLLM's `chat.completion` body (reasoning split off by the model's reasoning parser, then tool calls parsed by its
 * tool-call parser, as vLLM's chat server does), or as the `chat.completion.chunk` events of a stream carrying the
 * same answer. Only the answer is split: the token record keeps every generated id.
 * @see vLLM v0.19 `ChatCompletionResponse` / `ChatCompletionStreamResponse` (`chat_completion/protocol.py`)
 */

import { vllmAssistantMessage } from "../../../protocol/assistant-message.js";
import type { ReasoningParserName, ToolParserName } from "../../../protocol/index.js";
import { reasoningParser } from "../../../wire/reasoning.js";
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

/** The parsers of a tito model: its tool-call parser and its reasoning parser. */
export interface AnswerParsers {
  tool: ToolParserName;
  reasoning: ReasoningParserName;
}

/** Reasoning, content and tool calls of generated text: the reasoning parser first, the tool-call parser on the rest. */
function parseText(
  text: string,
  parsers: AnswerParsers,
  tools: readonly ChatTool[],
): { reasoning: string | null; content: string | null; toolCalls: Json[] } {
  const split =
    parsers.reasoning === "none" ? { reasoning: null, content: text } : reasoningParser(parsers.reasoning).split(text);
  if (parsers.tool === "none" || split.content === null) return { ...split, toolCalls: [] };
  const parsed = toolCallParser(parsers.tool).parse(split.content, tools);
  return { reasoning: split.reasoning, content: parsed.content, toolCalls: parsed.toolCalls as unknown as Json[] };
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
 * @param parsers - how tool calls and reasoning are written in the text
 * @param agentWantsLogprobs - whether the agent asked for `logprobs: true`
 * @param text - the generated text to parse (default: the choice's `text`)
 * @param tools - the agent's `tools` (`qwen3_coder` types parameter values by their schema)
 * @returns vLLM's chat shape: message (content, tool_calls, reasoning), finish_reason (`tool_calls` when calls parsed),
 *   `token_ids`, top-level `prompt_token_ids`, usage
 */
export function chatAnswer(
  completion: Json,
  parsers: AnswerParsers,
  agentWantsLogprobs: boolean,
  text?: string,
  tools: readonly ChatTool[] = [],
): Json {
  const choice = firstChoice(completion);
  const generated = text ?? (typeof choice.text === "string" ? choice.text : "");
  const { reasoning, content, toolCalls } = parseText(generated, parsers, tools);
  const message = vllmAssistantMessage(content, toolCalls, reasoning);
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
 * `prompt_token_ids`, one reasoning chunk (`delta.reasoning`, as vLLM v0.19 streams it), one content chunk, one chunk
 * per tool call (whole arguments), the finishing chunk with
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
  if (typeof message.reasoning === "string" && message.reasoning !== "") {
    chunks.push(one({ delta: { reasoning: message.reasoning } }));
  }
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
