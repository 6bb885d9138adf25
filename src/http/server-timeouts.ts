/**
 * @module HTTP server timeouts as Fastify options, so a client that never finishes a request cannot hold a socket
 * (Fastify's default disables the request timeout). @see Node.js `http.createServer` `headersTimeout`, `requestTimeout`
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

/** Fastify options in ms; the request timeout is raised to the headers timeout if lower (Node requires it). */
export function serverTimeoutOptions(
  headersTimeoutSeconds: number,
  requestTimeoutSeconds: number,
): ServerTimeoutOptions {
  const headersTimeout = Math.max(1, Math.round(headersTimeoutSeconds * 1000));
  const requestTimeout = Math.max(headersTimeout, Math.round(requestTimeoutSeconds * 1000));
  const connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2)));
  return { requestTimeout, http: { headersTimeout, connectionsCheckingInterval } };
}

/** Closes gracefully, destroying every socket still open after `graceMs` so shutdown cannot hang. */
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
