/**
 * @module vLLM chat SSE chunks → Anthropic Messages SSE events, as they arrive: `message_start`, then per content
 * block `content_block_start`, `content_block_delta` (`text_delta`, or `input_json_delta` for tool arguments) and
 * `content_block_stop`, then `message_delta` (stop_reason, output tokens) and `message_stop`. A failure is one
 * `error` event. Every event is `event: <type>` plus `data: {"type": <type>, …}`.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */

import { anthropicErrorBody } from "../../../wire/error-bodies.js";
import { anthropicUsage, stopReasonOf } from "./anthropic-response.js";
import { chatAnswerOf } from "./responses-response.js";
import { isJson, type Json, namedSseEvent } from "./translation.js";

/** Turns one call's chat chunks into Messages events; one instance per call. */
export class AnthropicStreamWriter {
  private started = false;
  private promptTokens = 0;
  private outputTokens = 0;
  /** Index of the open content block, and whether it is the text block. */
  private open: { index: number; text: boolean } | null = null;
  private nextIndex = 0;
  private readonly callBlocks = new Map<number, number>();
  private finishReason: unknown = null;
  private stopReason: unknown = null;

  /**
   * @param request - the agent's Messages body
   * @param id - the `msg_…` id
   */
  constructor(
    private readonly request: Json,
    private readonly id: string,
  ) {}

  private start(chunk: Json): string {
    this.started = true;
    if (Array.isArray(chunk.prompt_token_ids)) this.promptTokens = chunk.prompt_token_ids.length;
    const message = {
      id: this.id,
      type: "message",
      role: "assistant",
      model: chunk.model ?? this.request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsage(this.promptTokens, 0),
    };
    return namedSseEvent("message_start", { type: "message_start", message }) + namedSseEvent("ping", { type: "ping" });
  }

  private close(): string {
    if (this.open === null) return "";
    const index = this.open.index;
    this.open = null;
    return namedSseEvent("content_block_stop", { type: "content_block_stop", index });
  }

  private openBlock(text: boolean, block: Json): string {
    const out = this.close();
    this.open = { index: this.nextIndex++, text };
    const start = { type: "content_block_start", index: this.open.index, content_block: block };
    return out + namedSseEvent("content_block_start", start);
  }

  private delta(index: number, delta: Json): string {
    return namedSseEvent("content_block_delta", { type: "content_block_delta", index, delta });
  }

  private toolCall(call: Json): string {
    const k = typeof call.index === "number" ? call.index : 0;
    const fn = isJson(call.function) ? call.function : {};
    let out = "";
    if (!this.callBlocks.has(k)) {
      const block = { type: "tool_use", id: String(call.id ?? ""), name: String(fn.name ?? ""), input: {} };
      out += this.openBlock(false, block);
      this.callBlocks.set(k, this.open!.index);
    }
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      out += this.delta(this.callBlocks.get(k)!, { type: "input_json_delta", partial_json: fn.arguments });
    }
    return out;
  }

  /**
   * Events for one upstream chunk.
   * @param chunk - a parsed `chat.completion.chunk`
   * @returns SSE text, possibly empty
   */
  chunk(chunk: Json): string {
    let out = this.started ? "" : this.start(chunk);
    const choice = Array.isArray(chunk.choices) && isJson(chunk.choices[0]) ? chunk.choices[0] : null;
    if (choice === null) return out;
    if (Array.isArray(choice.token_ids)) this.outputTokens += choice.token_ids.length;
    if (choice.finish_reason != null) {
      this.finishReason = choice.finish_reason;
      this.stopReason = choice.stop_reason ?? null;
    }
    const delta = isJson(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string" && delta.content !== "" && this.callBlocks.size === 0) {
      if (this.open?.text !== true) out += this.openBlock(true, { type: "text", text: "" });
      out += this.delta(this.open!.index, { type: "text_delta", text: delta.content });
    }
    if (Array.isArray(delta.tool_calls))
      for (const call of delta.tool_calls) if (isJson(call)) out += this.toolCall(call);
    return out;
  }

  /**
   * Closes the open block and ends the message.
   * @param assembled - the stream as one `chat.completion` body; its usage wins over the counted ids
   */
  end(assembled: Json | null): string {
    let out = (this.started ? "" : this.start({})) + this.close();
    const outputTokens = assembled ? chatAnswerOf(assembled).outputTokens : this.outputTokens;
    const stopReason = stopReasonOf(this.finishReason, this.stopReason, this.request.stop_sequences);
    const stopSequence = stopReason === "stop_sequence" ? this.stopReason : null;
    out += namedSseEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: stopSequence },
      usage: { output_tokens: outputTokens },
    });
    return out + namedSseEvent("message_stop", { type: "message_stop" });
  }

  /**
   * An `error` event for a failed stream.
   * @param message - what went wrong
   * @param status - 502, 504, or the upstream error's code
   */
  error(message: string, status: number): string {
    return (this.started ? "" : this.start({})) + namedSseEvent("error", anthropicErrorBody(status, message));
  }
}
