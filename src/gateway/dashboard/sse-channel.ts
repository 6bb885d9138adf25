/**
 * @module One Server-Sent Events response: named events with JSON data, a keep-alive comment, and close.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html
 */
import type { ServerResponse } from "node:http";

/** An open `text/event-stream` response. */
export class SseChannel {
  private readonly raw: ServerResponse;
  private closed = false;

  /**
   * Writes the stream's headers.
   * @param raw - the Node response of a hijacked Fastify reply
   */
  constructor(raw: ServerResponse) {
    this.raw = raw;
    raw.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    raw.on("close", () => {
      this.closed = true;
    });
  }

  /** True once the client went away or {@link close} ran. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Sends one event.
   * @param event - the event name (`run`, `steps`, `rollouts`)
   * @param data - any JSON value; written on one `data:` line
   */
  send(event: string, data: unknown): void {
    if (!this.closed) this.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Sends a comment line, which keeps proxies from timing the connection out. */
  keepAlive(): void {
    if (!this.closed) this.raw.write(": keep-alive\n\n");
  }

  /** Ends the response. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.raw.end();
  }
}
