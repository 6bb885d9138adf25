/**
 * @module Server-Sent Events as OpenAI-compatible servers write them: an incremental parser (linear in event size)
 * and a writer ending with `data: [DONE]`. @see WHATWG HTML § server-sent events, event stream interpretation
 */
import type { ServerResponse } from "node:http";
import { vllmErrorObject } from "./error-bodies.js";

/** The payload that ends an OpenAI-style stream. */
export const SSE_DONE = "[DONE]";

/** Splits an SSE byte stream into events' data (`data:` lines joined by "\n"); other fields are ignored. */
export class SseParser {
  private readonly decoder = new TextDecoder("utf-8");
  private pending = "";

  /** Data of the events this chunk completes, in order. */
  feed(chunk: Uint8Array): string[] {
    return this.consume(this.decoder.decode(chunk, { stream: true }));
  }

  /** Flushes the decoder and returns a last event that lacked its blank line. */
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

/** `data: <payload>\n\n`; the payload holds no newline. */
export function sseEvent(data: string): string {
  return `data: ${data}\n\n`;
}

/** An open SSE stream on one response, written as vLLM writes its streams. */
export interface SseStream {
  /** Writes one `data:` event of the value's JSON. */
  send(data: unknown): void;
  /** Writes an error event (vLLM's shape), then `[DONE]`, and ends the response. */
  fail(message: string): void;
  /** Writes `data: [DONE]` and ends the response. */
  done(): void;
}

/** Writes the SSE headers and returns the stream; writes after the client left or the end are dropped. */
export function openSse(raw: ServerResponse, extraHeaders: Record<string, string>): SseStream {
  let ended = false;
  raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    ...extraHeaders,
  });
  const write = (text: string): void => {
    if (!ended && !raw.destroyed) raw.write(text);
  };
  const end = (): void => {
    write(sseEvent(SSE_DONE));
    ended = true;
    raw.end();
  };
  return {
    send: (data) => write(sseEvent(JSON.stringify(data))),
    fail: (message) => {
      write(sseEvent(JSON.stringify({ error: vllmErrorObject(500, message) })));
      end();
    },
    done: end,
  };
}

/** A signal aborted when the client goes away before the response is complete. */
export function disconnectSignal(raw: ServerResponse): AbortSignal {
  const controller = new AbortController();
  raw.on("close", () => {
    if (!raw.writableFinished) controller.abort(new Error("client closed the connection"));
  });
  return controller.signal;
}
