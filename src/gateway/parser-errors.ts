/**
 * @module The gateway's answer to a request Node's HTTP parser refuses before Fastify sees it (its
 * `clientErrorHandler` option): headers over Node's 16 KiB limit (431), a malformed request such as
 * `Content-Length: abc` (400), a request not received in time (408). The answer is the `{detail, code}` JSON of every
 * other error, and each is logged at `info` as `client error` (no `request completed` line or `/metrics` count:
 * there is no request to name, only a connection).
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyBaseLogger } from "fastify";

/** A client error as Node's HTTP server reports it (`clientError` event): `code` names what the parser refused. */
export interface ClientError extends Error {
  code?: string;
}

/**
 * The status, `code` and `detail` for a client error.
 * @param err - the parser's error (`HPE_*` codes from llhttp, `ERR_HTTP_REQUEST_TIMEOUT`)
 */
export function clientErrorAnswer(err: ClientError): { status: number; code: string; detail: string } {
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return { status: 408, code: "request_timeout", detail: "The request was not received in time" };
  }
  if (err.code === "HPE_HEADER_OVERFLOW") {
    return {
      status: 431,
      code: "header_overflow",
      detail: "Request headers too large: Node's limit is 16 KiB for the request line and headers together",
    };
  }
  const parserCode = err.code ?? "unknown";
  return { status: 400, code: "malformed_request", detail: `Malformed HTTP request (${parserCode})` };
}

/**
 * Builds Fastify's `clientErrorHandler`: writes the {@link clientErrorAnswer} as a JSON answer on the raw socket,
 * logs it, and closes the connection (as Node does after a client error). A reset or already closed connection is
 * left alone.
 * @param log - where the `client error` line goes
 */
export function clientErrorHandler(log: FastifyBaseLogger): (err: ClientError, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const { status, code, detail } = clientErrorAnswer(err);
    log.info({ status, code, parserCode: err.code, remoteAddress: socket.remoteAddress }, "client error");
    if (socket.writable) {
      const body = JSON.stringify({ detail, code });
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
