/**
 * @module vLLM chat SSE chunks → OpenAI Responses API SSE events, as they arrive. Sequence for a text answer:
 * `response.created`, `response.in_progress`, `response.output_item.added` (message), `response.content_part.added`,
 * `response.output_text.delta`…, `response.output_text.done`, `response.content_part.done`,
 * `response.output_item.done`, `response.completed` (`response.incomplete` when cut by length). Each tool call adds
 * `response.output_item.added` (function_call), `response.function_call_arguments.delta`…,
 * `response.function_call_arguments.done`, `response.output_item.done`. Every event is `event: <type>` plus
 * `data: {"type": <type>, "sequence_number": n, …}`; there is no `[DONE]`.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
import {
  type ChatAnswer,
  chatAnswerOf,
  functionCallItem,
  messageItem,
  outputTextPart,
  type ResponsesIds,
  responseObject,
} from "./responses-response.js";
import { isJson, type Json, namedSseEvent } from "./translation.js";

interface OpenCall {
  outputIndex: number;
  itemId: string;
  id: string;
  name: string;
  args: string;
}

/** Turns one call's chat chunks into Responses events; one instance per call. */
export class ResponsesStreamWriter {
  private sequence = 0;
  private started = false;
  private createdAt = Math.floor(Date.now() / 1000);
  private model: unknown;
  private nextOutputIndex = 0;
  private message: { outputIndex: number; text: string; closed: boolean } | null = null;
  private readonly calls = new Map<number, OpenCall>();
  private deltaHead: string | undefined;
  private deltaTail: string | undefined;

  /**
   * @param request - the agent's Responses body
   * @param ids - ids shared with the final response object
   */
  constructor(
    private readonly request: Json,
    private readonly ids: ResponsesIds,
  ) {
    this.model = request.model;
  }

  private event(type: string, fields: Json): string {
    return namedSseEvent(type, { type, sequence_number: this.sequence++, ...fields });
  }

  private start(chunk: Json): string {
    this.started = true;
    if (typeof chunk.created === "number") this.createdAt = chunk.created;
    if (chunk.model !== undefined) this.model = chunk.model;
    const response = responseObject(this.request, this.ids, this.model, this.createdAt, null);
    return this.event("response.created", { response }) + this.event("response.in_progress", { response });
  }

  private text(delta: string): string {
    let out = "";
    if (this.message === null) {
      this.message = { outputIndex: this.nextOutputIndex++, text: "", closed: false };
      const item = messageItem(this.ids.messageId, "", "in_progress");
      out += this.event("response.output_item.added", { output_index: this.message.outputIndex, item });
      out += this.event("response.content_part.added", {
        item_id: this.ids.messageId,
        output_index: this.message.outputIndex,
        content_index: 0,
        part: outputTextPart(""),
      });
    }
    this.message.text += delta;
    // The hot path (one event per generated token): the fixed part of the event is built once per message.
    this.deltaHead ??= `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":`;
    this.deltaTail ??= `,"item_id":"${this.ids.messageId}","output_index":${this.message.outputIndex},"content_index":0,"delta":`;
    return `${out}${this.deltaHead}${this.sequence++}${this.deltaTail}${JSON.stringify(delta)},"logprobs":[]}\n\n`;
  }

  private closeMessage(): string {
    const message = this.message;
    if (message === null || message.closed) return "";
    message.closed = true;
    const where = { item_id: this.ids.messageId, output_index: message.outputIndex, content_index: 0 };
    return (
      this.event("response.output_text.done", { ...where, text: message.text, logprobs: [] }) +
      this.event("response.content_part.done", { ...where, part: outputTextPart(message.text) }) +
      this.event("response.output_item.done", {
        output_index: message.outputIndex,
        item: messageItem(this.ids.messageId, message.text, "completed"),
      })
    );
  }

  private toolCall(delta: Json): string {
    const index = typeof delta.index === "number" ? delta.index : 0;
    const fn = isJson(delta.function) ? delta.function : {};
    let out = "";
    let call = this.calls.get(index);
    if (call === undefined) {
      call = {
        outputIndex: this.nextOutputIndex++,
        itemId: this.ids.callItemId(this.calls.size),
        id: typeof delta.id === "string" ? delta.id : "",
        name: typeof fn.name === "string" ? fn.name : "",
        args: "",
      };
      this.calls.set(index, call);
      const item = functionCallItem(call.itemId, { ...call, arguments: "" }, "in_progress");
      out += this.event("response.output_item.added", { output_index: call.outputIndex, item });
    }
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      call.args += fn.arguments;
      out += this.event("response.function_call_arguments.delta", {
        item_id: call.itemId,
        output_index: call.outputIndex,
        delta: fn.arguments,
      });
    }
    return out;
  }

  private closeCalls(): string {
    let out = "";
    for (const call of this.calls.values()) {
      const where = { item_id: call.itemId, output_index: call.outputIndex };
      out += this.event("response.function_call_arguments.done", { ...where, arguments: call.args });
      const item = functionCallItem(call.itemId, { ...call, arguments: call.args }, "completed");
      out += this.event("response.output_item.done", { output_index: call.outputIndex, item });
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
    const delta = choice && isJson(choice.delta) ? choice.delta : null;
    if (delta === null) return out;
    if (typeof delta.content === "string" && delta.content !== "") {
      if (this.calls.size > 0) return out; // hermes sends no text after a tool call; a stray piece is dropped
      out += this.text(delta.content);
    }
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) {
      out += this.closeMessage();
      for (const call of delta.tool_calls) if (isJson(call)) out += this.toolCall(call);
    }
    return out;
  }

  /**
   * Closes the open items and sends the final response.
   * @param assembled - the stream as one `chat.completion` body (finish reason, usage); null when nothing came
   * @returns the closing events and the final `response` object (also what the gateway stores)
   */
  end(assembled: Json | null): { text: string; response: Json; answer: ChatAnswer } {
    let out = this.started ? "" : this.start({});
    out += this.closeMessage();
    out += this.closeCalls();
    const answer = assembled ? chatAnswerOf(assembled) : emptyAnswer();
    // The streamed pieces are what the agent saw; the final object repeats exactly them.
    answer.content = this.message ? this.message.text : this.calls.size > 0 ? null : (answer.content ?? "");
    answer.toolCalls = [...this.calls.values()].map((c) => ({ id: c.id, name: c.name, arguments: c.args }));
    const response = responseObject(this.request, this.ids, this.model, this.createdAt, answer);
    const type = response.status === "incomplete" ? "response.incomplete" : "response.completed";
    return { text: out + this.event(type, { response }), response, answer };
  }

  /**
   * An `error` event for a failed stream.
   * @param message - what went wrong
   * @param status - 502, 504, or the upstream error's code
   */
  error(message: string, status: number): string {
    const code = status === 504 ? "timeout" : "server_error";
    return (this.started ? "" : this.start({})) + this.event("error", { code, message, param: null });
  }
}

function emptyAnswer(): ChatAnswer {
  return { content: "", toolCalls: [], finishReason: null, promptTokens: 0, outputTokens: 0 };
}
