/**
 * @module Server-sent events as vLLM writes them: `data: <compact JSON>\n\n` events only, ending with
 * `data: [DONE]\n\n`; a failure mid-stream is one `data: {"error": {...}}` event before `[DONE]`.
 */
import type { FastifyReply } from "fastify";

/** An open SSE stream on one reply. */
export interface SseStream {
  /** Writes one `data:` event. */
  send(data: unknown): void;
  /** Writes an error event, then `[DONE]`, and ends the response. */
  fail(message: string): void;
  /** Writes `data: [DONE]` and ends the response. */
  done(): void;
}

/**
 * Takes over the reply and writes the SSE headers (200, `text/event-stream; charset=utf-8`, plus `extraHeaders`).
 * @param extraHeaders - e.g. the policy version header
 */
export function openSse(reply: FastifyReply, extraHeaders: Record<string, string>): SseStream {
  let ended = false;
  reply.hijack();
  const raw = reply.raw;
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
    write("data: [DONE]\n\n");
    ended = true;
    raw.end();
  };
  return {
    send: (data) => write(`data: ${JSON.stringify(data)}\n\n`),
    fail: (message) => {
      write(`data: ${JSON.stringify({ error: { message, type: "InternalServerError", param: null, code: 500 } })}\n\n`);
      end();
    },
    done: end,
  };
}

/** A signal aborted when the client goes away before the response is complete (cancels waiting and generation). */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished) controller.abort(new Error("client closed the connection"));
  });
  return controller.signal;
}
