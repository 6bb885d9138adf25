/** @module Answering a request whose client ended its side of the connection after sending it. */
import type { Server } from "node:http";

/**
 * Answers requests whose client half-closed after sending (`nc -N`): Node's default ends the socket on FIN, so a
 * slow answer is never written. @see Node.js `lib/_http_server.js` `socketOnEnd` (`httpAllowHalfOpen`)
 */
export function answerHalfClosedRequests(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
