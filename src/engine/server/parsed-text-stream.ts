/**
 * @module Streaming with a parser that reads the whole generation (a tool-call format other than Hermes, or a
 * reasoning parser): every id streams as `delta: {}` and the finishing chunk carries the parsed message whole —
 * `reasoning`, `content` and every tool call — so the concatenated deltas equal the non-stream message. vLLM sends
 * the same pieces incrementally; clients that accumulate deltas (as OpenAI clients do) read the same message.
 */
import type { WireToolCall } from "../../wire/tool-calls.js";
import { type ChatRenderOptions, parseGeneratedText, parserText } from "./chat-response.js";

/** The finishing delta of a whole-text parse. */
export interface ParsedDelta {
  content: string | null;
  reasoning?: string;
  tool_calls?: (WireToolCall & { index: number })[];
}

/** Per-choice stream that parses once, at the end. */
export class ParsedTextStream {
  private readonly ids: number[] = [];
  /** Calls sent (all at the end). */
  callsSent = 0;

  /** @param options - the request's render options (tokenizer, stop strings, parsers, tools) */
  constructor(private readonly options: ChatRenderOptions) {}

  /** @returns `{}`: the text is held until the generation ends */
  push(id: number): Record<string, never> {
    this.ids.push(id);
    return {};
  }

  /** @returns the whole parsed message as one delta (`content` always present, null when none) */
  finish(): ParsedDelta {
    const parsed = parseGeneratedText(parserText(this.ids, this.options), this.options);
    const delta: ParsedDelta = { content: parsed.content === "" ? null : parsed.content };
    if (parsed.reasoning !== null) delta.reasoning = parsed.reasoning;
    if (parsed.toolCalls.length > 0) delta.tool_calls = parsed.toolCalls.map((call, index) => ({ index, ...call }));
    this.callsSent = parsed.toolCalls.length;
    return delta;
  }
}
