/**
 * @module Test helpers for the engine server: JSON POSTs and SSE reads with `fetch` against a real listening server.
 * Not part of the build.
 */

/** A JSON answer: status, headers and parsed body. */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests index into vLLM-shaped bodies freely
  body: any;
}

/** POSTs `body` as JSON to `url + path` and parses the JSON answer. */
export async function postJson(url: string, path: string, body: unknown): Promise<JsonAnswer> {
  const response = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** An SSE answer: status, headers, the parsed `data:` events before `[DONE]`, and whether `[DONE]` came last. */
export interface SseAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests index into vLLM-shaped chunks freely
  events: any[];
  done: boolean;
  raw: string;
}

/** POSTs `body` as JSON and reads the whole SSE stream. */
export async function postSse(url: string, path: string, body: unknown): Promise<SseAnswer> {
  const response = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  const datas = raw
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      if (!block.startsWith("data: ")) throw new Error(`not an SSE data event: ${block}`);
      return block.slice("data: ".length);
    });
  const done = datas.at(-1) === "[DONE]";
  const events = datas.filter((d) => d !== "[DONE]").map((d) => JSON.parse(d));
  return { status: response.status, headers: response.headers, events, done, raw };
}

// biome-ignore lint/suspicious/noExplicitAny: chunk shapes are checked by the tests
type SseChunk = any;

/**
 * Concatenates the `token_ids` of every chunk of choice `index` (what a capturing proxy does).
 * @param events - parsed SSE chunks, as {@link SseAnswer.events}
 * @param index - the choice
 * @returns the choice's token ids in stream order
 */
export function streamedTokenIds(events: SseChunk[], index = 0): number[] {
  return events.flatMap(
    (e) =>
      e.choices
        ?.filter((c: { index: number }) => c.index === index)
        .flatMap((c: { token_ids?: number[] | null }) => c.token_ids ?? []) ?? [],
  );
}
