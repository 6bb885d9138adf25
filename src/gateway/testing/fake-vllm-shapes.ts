/**
 * @module Bodies in vLLM v0.19's exact wire shapes, built from a tiny fake tokenizer, for the fake upstream.
 *
 * Facts copied from vLLM v0.19.0 (`chat_completion/serving.py`, `completion/serving.py`, `protocol.py`):
 * - Non-stream bodies dump every pydantic field: chat top level `id, object:"chat.completion", created, model, choices,
 *   service_tier:null, system_fingerprint:null, usage, prompt_logprobs:null, prompt_token_ids, kv_transfer_params:null`;
 *   chat choice `index, message, logprobs, finish_reason, stop_reason, token_ids`; message `role, content, refusal,
 *   annotations, audio, function_call, tool_calls ([] when none), reasoning`.
 * - Completions choice `index, text, logprobs, finish_reason, stop_reason, token_ids, prompt_logprobs,
 *   prompt_token_ids` (prompt ids per choice; a token-array prompt is echoed exactly); logprobs
 *   `{text_offset, token_logprobs, tokens, top_logprobs}`; `max_tokens` defaults to 16.
 * - Generated `token_ids` end with the stop id (EOS, here 2) when stopped on it; the text does not contain it;
 *   stopped by length: no EOS, `finish_reason: "length"`. Logprobs: one entry per id, EOS included; chat entry
 *   `{token, logprob, bytes, top_logprobs: []}`; a token that is an incomplete UTF-8 piece shows `token: ""`.
 * - usage `{prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details: null}`, completion_tokens counting
 *   every generated id.
 * - Hermes tool calls: `token_ids` hold the raw generation (`<tool_call>` = 7, the JSON, `</tool_call>` = 8, EOS);
 *   `arguments` is Python `json.dumps(..., ensure_ascii=False)` text (", " and ": " separators); non-stream content is
 *   null when blank; `finish_reason: "tool_calls"`; ids `chatcmpl-tool-<16 hex>` (random in vLLM; derived from the
 *   request here, so a stream and a non-stream call of the same request can be compared).
 *
 * Fake tokenizer: each ASCII character is one token (id 1000 + code); every other character is one token per UTF-8
 * byte (id 5000 + byte), so emoji and CJK characters span several ids, as with a byte-level BPE.
 */
import { createHash } from "node:crypto";

/** The fake EOS id. */
export const EOS_ID = 2;
/** The fake `<tool_call>` special-token id. */
export const TOOL_CALL_OPEN_ID = 7;
/** The fake `</tool_call>` special-token id. */
export const TOOL_CALL_CLOSE_ID = 8;
/** Fixed `created` (epoch s); vLLM uses the clock, fixed here so that two calls compare equal. */
export const CREATED = 1760000000;

/** One generated token: its id, its text as the detokenizer shows it in the stream, its logprob entry. */
export interface FakeToken {
  id: number;
  /** Text the stream emits for this token ("" for a byte that does not complete a character, and for EOS). */
  text: string;
  /** `token` field of its logprob entry (vLLM decodes each id alone; an incomplete UTF-8 piece shows as ""). */
  tokenString: string;
  bytes: number[];
  logprob: number;
}

function logprobOf(id: number): number {
  return -((id % 97) + 1) / 100;
}

/** Tokenizes text with the fake tokenizer (module doc). */
export function tokenize(text: string): FakeToken[] {
  const out: FakeToken[] = [];
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code < 128) {
      out.push({ id: 1000 + code, text: ch, tokenString: ch, bytes: [code], logprob: logprobOf(1000 + code) });
      continue;
    }
    const bytes = [...Buffer.from(ch, "utf8")];
    bytes.forEach((byte, i) => {
      const last = i === bytes.length - 1;
      // vLLM holds back the text of an incomplete UTF-8 sequence and emits the whole character with its last byte.
      out.push({
        id: 5000 + byte,
        text: last ? ch : "",
        tokenString: last ? ch : "",
        bytes: [byte],
        logprob: logprobOf(5000 + byte),
      });
    });
  }
  return out;
}

/** A special token (tool-call tags, EOS): in the ids, never in the text. */
export function specialToken(id: number, tokenString: string): FakeToken {
  return { id, text: "", tokenString, bytes: [...Buffer.from(tokenString, "utf8")], logprob: logprobOf(id) };
}

/** Python `json.dumps(value, ensure_ascii=False)` for plain JSON values (", " and ": " separators). */
export function pyJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pyJsonDumps).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pyJsonDumps(v)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** 16 hex chars derived from a request body, ignoring its streaming fields. */
export function requestHex(body: Record<string, unknown>, salt = ""): string {
  const { stream: _s, stream_options: _o, ...rest } = body;
  return createHash("sha256")
    .update(JSON.stringify(rest) + salt)
    .digest("hex")
    .slice(0, 16);
}

/** @returns `chatcmpl-<hex>` / `cmpl-<hex>` for a request (stable across its stream and non-stream forms) */
export function responseIdOf(kind: "chat" | "completions", body: Record<string, unknown>): string {
  return `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestHex(body)}`;
}

/** Fake prompt ids of a request: BOS (1), then the tokens of the messages' JSON (chat) or of the prompt text. */
export function promptIdsOf(body: Record<string, unknown>): number[] {
  if (Array.isArray(body.prompt) && body.prompt.every((x) => typeof x === "number")) return body.prompt as number[];
  const source = body.messages !== undefined ? JSON.stringify(body.messages) : String(body.prompt ?? "");
  return [1, ...tokenize(source).map((t) => t.id)];
}

/** A chat logprob entry. */
export function chatLogprob(token: FakeToken): Record<string, unknown> {
  return { token: token.tokenString, logprob: token.logprob, bytes: token.bytes, top_logprobs: [] };
}

/** vLLM's usage object. */
export function usageOf(promptTokens: number, completionTokens: number): Record<string, unknown> {
  return {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + completionTokens,
    completion_tokens: completionTokens,
    prompt_tokens_details: null,
  };
}

/** vLLM's `ErrorResponse` body. */
export function errorBody(message: string, type: string, code: number): Record<string, unknown> {
  return { error: { message, type, param: null, code } };
}
