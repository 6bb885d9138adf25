/**
 * @module Incremental Server-Sent Events parser: bytes in, complete `data:` payloads out, as they arrive.
 * UTF-8 characters split across network chunks (emoji, CJK) are decoded correctly, and a huge event (a 100k-id
 * `prompt_token_ids` array) costs linear time however many chunks it spans.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */

/** The payload that ends an OpenAI-style stream. */
export const SSE_DONE = "[DONE]";

/**
 * Splits an SSE byte stream into events and returns each event's data (multiple `data:` lines joined by "\n").
 * Comment lines and other fields (`event:`, `id:`, `retry:`) are ignored; vLLM sends only `data:` lines.
 */
export class SseParser {
  private readonly decoder = new TextDecoder("utf-8");
  private pending = "";

  /**
   * Feeds the next network chunk.
   * @param chunk - raw bytes as received
   * @returns data payloads of the events completed by this chunk, in order (often empty)
   */
  feed(chunk: Uint8Array): string[] {
    return this.consume(this.decoder.decode(chunk, { stream: true }));
  }

  /**
   * Ends the stream: flushes the decoder and parses a last event that lacked its blank line.
   * @returns data payloads of any event completed by the end of input
   */
  end(): string[] {
    const out = this.consume(`${this.decoder.decode()}\n\n`);
    this.pending = "";
    return out;
  }

  /** True when bytes of an unfinished event are buffered (the stream stopped mid-event). */
  get hasPartialEvent(): boolean {
    return this.pending.trim().length > 0;
  }

  private consume(text: string): string[] {
    if (text.length === 0) return [];
    let buffer = this.pending + text;
    // A lone trailing "\r" may be the first half of "\r\n": hold it back until the next chunk.
    let heldBack = "";
    if (buffer.endsWith("\r")) {
      heldBack = "\r";
      buffer = buffer.slice(0, -1);
    }
    if (buffer.includes("\r")) buffer = buffer.replace(/\r\n?/g, "\n");
    // Only the tail can hold a new boundary: rescanning from 0 would make a 1 MB event cost quadratic time.
    let searchFrom = Math.max(0, this.pending.length - 2);
    let start = 0;
    const out: string[] = [];
    for (;;) {
      const boundary = buffer.indexOf("\n\n", searchFrom);
      if (boundary < 0) break;
      const data = dataOf(buffer.slice(start, boundary));
      if (data !== null) out.push(data);
      start = boundary + 2;
      searchFrom = start;
    }
    this.pending = buffer.slice(start) + heldBack;
    return out;
  }
}

/** The joined `data:` lines of one event block, or null when it has none. */
function dataOf(block: string): string | null {
  let data: string | null = null;
  for (const line of block.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === null ? value : `${data}\n${value}`;
  }
  return data;
}

/**
 * Formats one SSE event.
 * @param data - the payload (JSON text or `[DONE]`), without newlines
 * @returns `data: <payload>\n\n`
 */
export function sseEvent(data: string): string {
  return `data: ${data}\n\n`;
}
