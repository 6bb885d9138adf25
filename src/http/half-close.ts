/** @module Answering a request whose client ended its side of the connection after sending it. */
import type { Server } from "node:http";

/**
 * Makes `server` answer requests whose client half-closed the connection once the request was sent (`nc -N`,
 * `socket.end(request)`): Node's default ends the socket on the client's FIN, so a slow answer (a model call) is
 * never written. With this, the answer goes out and the connection closes after it; an idle connection still closes
 * on FIN. A client that closed both sides is then seen when the answer is written, not at its FIN.
 * @param server - the Node HTTP server (Fastify's `app.server`)
 * @see Node.js `lib/_http_server.js` `socketOnEnd` (`httpAllowHalfOpen`, the switch Node's own tests use)
 */
export function answerHalfClosedRequests(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
