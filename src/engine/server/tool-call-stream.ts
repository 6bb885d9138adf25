/**
 * @module Streaming counterpart of the Hermes tool-call parser: turns generated ids, one at a time, into chat `delta`s.
 * Text before the first `<tool_call>` streams as content; the ids of a block stream as `delta: {}` and the call is sent
 * whole, as one `tool_calls` delta, on its `</tool_call>` id (clients accumulate deltas, so one piece is valid OpenAI).
 */

import { parseToolCallBlock } from "../../wire/tool-calls.js";
import type { ToolCallDelimiters } from "../chat-template.js";
import type { Tokenizer } from "../tokenizer.js";
import type { ParsedDelta } from "./parsed-text-stream.js";
import { TextAssembler } from "./text-stream.js";

/** A chat stream delta (vLLM `DeltaMessage`, the keys this server sends). */
export type ChatDelta =
  | Record<string, never>
  | { content: string }
  | {
      content: null;
      tool_calls: {
        index: number;
        id: string;
        type: "function";
        function: { name: string; arguments: string };
      }[];
    }
  | ParsedDelta;

/**
 * Per-choice streaming tool-call parser. States: `content` (before any block), `call` (inside a block, bytes
 * buffered), `after` (between or after blocks: text there is dropped, as the non-stream parser drops it).
 * A malformed block sends nothing; `finish_reason` is `tool_calls` when at least one call was sent.
 */
export class ToolCallStream {
  private state: "content" | "call" | "after" = "content";
  private block: number[] = [];
  private readonly content: TextAssembler;
  /** Calls sent so far (the next call's `index`). */
  callsSent = 0;

  /**
   * @param tokenizer - the engine's tokenizer
   * @param delimiters - the chat template's ids around a tool call
   * @param stop - stop strings applied to the content
   */
  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly delimiters: ToolCallDelimiters,
    stop: readonly string[] = [],
  ) {
    this.content = new TextAssembler(tokenizer, stop);
  }

  /** @returns the delta of one generated id; `{}` for ids the parser keeps to itself */
  push(id: number): ChatDelta {
    if (id === this.delimiters.startId && this.state !== "call") {
      this.state = "call";
      this.block = [];
      return {};
    }
    if (this.state === "call") return this.inBlock(id);
    if (this.state === "after") return {};
    const text = this.content.push(id);
    return text === "" ? {} : { content: text };
  }

  /** @returns the delta of text held back until the end (content state only), or `{}` */
  finish(): ChatDelta {
    if (this.state !== "content") return {};
    const text = this.content.finish();
    return text === "" ? {} : { content: text };
  }

  private inBlock(id: number): ChatDelta {
    if (id !== this.delimiters.endId) {
      if (!this.tokenizer.isSpecial(id)) this.block.push(id);
      return {};
    }
    this.state = "after";
    const call = parseToolCallBlock(this.tokenizer.decode(this.block).trim());
    if (call === undefined) return {};
    return { content: null, tool_calls: [{ index: this.callsSent++, ...call }] };
  }
}
