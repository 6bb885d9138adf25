/** @module One JSON request to a tracking server, failing with the server's answer in the message. */

/**
 * Sends a JSON request and reads a JSON answer.
 * @param url - the full URL
 * @param init - method, headers and a body to send as JSON
 * @param timeoutMs - abort after this long
 * @returns the parsed answer (`{}` for an empty body)
 * @throws {Error} naming the method, URL path and status with the first 300 characters of the answer, on a non-2xx
 *   status; naming the method, URL (without credentials or query) and the cause (e.g. `ECONNREFUSED`) when no answer
 *   came
 */
export async function requestJson(
  url: string,
  init: { method: "GET" | "POST" | "PUT"; headers?: Record<string, string>; body?: unknown },
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw transportError(init.method, url, err);
  }
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`${init.method} ${new URL(url).pathname} answered ${res.status}: ${text.slice(0, 300)}`);
  }
  return text.trim() === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/**
 * @param method - the request's method
 * @param url - the URL asked
 * @param err - what `fetch` threw
 * @returns an error naming the method, the URL (without credentials or query) and the cause, e.g. `ECONNREFUSED`
 */
export function transportError(method: string, url: string | URL, err: unknown): Error {
  return new Error(`${method} ${shownUrl(String(url))} failed: ${transportCause(err)}`);
}

/** The URL as errors show it: without user, password or query. */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return JSON.stringify(url);
  }
}

/** Why fetch got no answer: undici's `fetch failed` wraps the socket error (code, e.g. ECONNREFUSED) as `cause`. */
function transportCause(err: unknown): string {
  const error = err as Error & { cause?: { code?: string; message?: string } };
  if (error.name === "TimeoutError") return `no answer in time (${error.message})`;
  const cause = error.cause;
  if (cause === undefined) return error.message;
  const code = cause.code === undefined ? "" : `${cause.code}: `;
  return `${error.message} (${code}${cause.message ?? String(cause)})`;
}
