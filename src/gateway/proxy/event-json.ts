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
  const { model, model_version, request, response, ...rest } = data;
  // Anything but the key order buildModelRequestData writes falls back to the plain path.
  const keys = Object.keys(data);
  if (keys[0] !== "model" || keys[1] !== "model_version" || keys[2] !== "request" || keys[3] !== "response") {
    return JSON.stringify(data);
  }
  if (request === undefined || response === undefined) return JSON.stringify(data);
  const requestJson = request === known.request ? known.requestText : JSON.stringify(request);
  const responseJson =
    known.responseText !== undefined && response === known.response ? known.responseText : JSON.stringify(response);
  const restJson = JSON.stringify(rest);
  const tail = restJson === "{}" ? "" : `,${restJson.slice(1, -1)}`;
  return (
    `{"model":${JSON.stringify(model)},"model_version":${JSON.stringify(model_version)},` +
    `"request":${requestJson},"response":${responseJson}${tail}}`
  );
}
