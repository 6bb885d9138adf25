/**
 * @module The JSON text of a `model_request` event's data, reusing the texts the proxy already holds: the body it
 * sent upstream and the upstream's response body are spliced in, not serialised again. With long
 * prompts and logprobs those two are nearly the whole event (hundreds of kB), so this saves one full
 * `JSON.stringify` of them per call.
 */
import type { ModelRequestData } from "../../protocol/index.js";

/** Texts the proxy already has, each with the object it is the JSON of. */
export interface KnownJson {
  /** The body sent upstream, and its text (the agent's text with the proxy's fields spliced in). */
  request: unknown;
  requestText: string;
  /** The parsed upstream body, and the text it was parsed from; absent for a stream (assembled, no text). */
  response?: unknown;
  responseText?: string;
}

/**
 * Serialises `data` like `JSON.stringify(data)`: the same value and key order. `data.request` / `data.response` are
 * taken from `known` as text when they are the very objects `known` names (a response changed by the capture check,
 * e.g. misaligned logprobs nulled, is a new object and is serialised).
 * @param data - event data built by `buildModelRequestData`
 * @param known - texts already held for the request and response
 * @returns the JSON text of `data`
 */
export function modelRequestDataJson(data: ModelRequestData, known: KnownJson): string {
  const { request, response } = data;
  if (request === undefined || response === undefined) return JSON.stringify(data);
  let json = "{";
  let position = 0;
  // One pass over the keys in order, each written as JSON.stringify would (an undefined value is left out); no copy
  // of `data` without the two texts (a rest object and its stringify cost more than the rest of this function).
  for (const key in data) {
    const value = (data as unknown as Record<string, unknown>)[key];
    // Anything but the key order buildModelRequestData writes falls back to the plain path (so the two texts are
    // never first: the comma before them is always due).
    if (position < 4 && key !== LEADING_KEYS[position]) return JSON.stringify(data);
    if (key === "request")
      json += `,"request":${request === known.request ? known.requestText : JSON.stringify(request)}`;
    else if (key === "response") json += `,"response":${responseJson(response, known)}`;
    else {
      const valueJson = JSON.stringify(value);
      if (valueJson !== undefined) json += `${json.length === 1 ? "" : ","}${JSON.stringify(key)}:${valueJson}`;
    }
    position++;
  }
  return `${json}}`;
}

/** The keys `buildModelRequestData` writes first, in its order. */
const LEADING_KEYS = ["model", "model_version", "request", "response"] as const;

/** The response's JSON: the upstream's own text when `response` is the very object parsed from it. */
function responseJson(response: unknown, known: KnownJson): string {
  return known.responseText !== undefined && response === known.response
    ? known.responseText
    : JSON.stringify(response);
}
