/** @module One JSON request to a tracking server, failing with the server's answer in the message. */

/**
 * Sends a JSON request and reads a JSON answer.
 * @param url - the full URL
 * @param init - method, headers and a body to send as JSON
 * @param timeoutMs - abort after this long
 * @returns the parsed answer (`{}` for an empty body)
 * @throws {Error} naming the method, URL path and status with the first 300 characters of the answer, on a non-2xx
 *   status or a transport failure
 */
export async function requestJson(
  url: string,
  init: { method: "GET" | "POST" | "PUT"; headers?: Record<string, string>; body?: unknown },
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, {
    method: init.method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`${init.method} ${new URL(url).pathname} answered ${res.status}: ${text.slice(0, 300)}`);
  }
  return text.trim() === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}
