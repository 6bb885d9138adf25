/**
 * @module Timeouts of arclight's HTTP servers (gateway, engine server) as Fastify options, so a client that opens
 * sockets and never finishes its headers or body cannot hold them: Node answers 408 and closes the socket once the
 * headers (`headersTimeout`) or the whole request (`requestTimeout`) took too long. Fastify's own default disables
 * the request timeout; Node checks the deadlines every `connectionsCheckingInterval`.
 * @see Node.js `http.createServer` options `headersTimeout`, `requestTimeout`, `connectionsCheckingInterval`
 */

/** Seconds a client has to send a request's headers, by default. */
export const DEFAULT_HEADERS_TIMEOUT_SECONDS = 30;
/** Seconds a client has to send a whole request (headers and body), by default. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 300;

/** The Fastify options that set the timeouts. */
export interface ServerTimeoutOptions {
  requestTimeout: number;
  http: { headersTimeout: number; connectionsCheckingInterval: number };
}

/**
 * Fastify options for the given timeouts.
 * @param headersTimeoutSeconds - seconds to receive the headers
 * @param requestTimeoutSeconds - seconds to receive the whole request; raised to the headers timeout if lower (Node
 *   requires headers ≤ request)
 * @returns `{ requestTimeout, http: { headersTimeout, connectionsCheckingInterval } }`, in ms; deadlines are checked
 *   every second, or twice per headers timeout when that is shorter
 */
export function serverTimeoutOptions(
  headersTimeoutSeconds: number,
  requestTimeoutSeconds: number,
): ServerTimeoutOptions {
  const headersTimeout = Math.max(1, Math.round(headersTimeoutSeconds * 1000));
  const requestTimeout = Math.max(headersTimeout, Math.round(requestTimeoutSeconds * 1000));
  const connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2)));
  return { requestTimeout, http: { headersTimeout, connectionsCheckingInterval } };
}

/**
 * Closes a server gracefully, then forcibly after a grace period: `close()` stops accepting, closes idle keep-alive
 * sockets and waits for in-flight requests; after `graceMs` every socket still open (a half-sent body, a stalled
 * client, a long stream) is destroyed so shutdown cannot hang.
 * @param close - the graceful close (e.g. `app.close()`)
 * @param server - the node server whose sockets are destroyed after the grace
 * @param graceMs - how long in-flight requests get, ms
 * @returns once `close` resolved
 */
export async function closeWithGrace(
  close: () => Promise<unknown>,
  server: { closeAllConnections(): void },
  graceMs: number,
): Promise<void> {
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  try {
    await close();
  } finally {
    clearTimeout(timer);
  }
}
