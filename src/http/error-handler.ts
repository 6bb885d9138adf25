/**
 * @module The single error handler of arclight's HTTP servers (gateway and engine server): every error becomes JSON `{ detail }` with the right status
 * (on the LLM proxy's routes, with OpenAI's `error` object beside it).
 * `ArclightError` → its status + `{detail, code}` and its extra `fields`; validation → 422 with FastAPI-shaped `detail` items;
 * Fastify client errors (bad JSON, body too large) → their 4xx; anything else → 500, logged with its stack.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ArclightError, quoteStart, ValidationFailed } from "../protocol/index.js";
import { type OpenaiErrorObject, openaiErrorObject } from "../wire/error-bodies.js";

/** The body of every error answer. `detail` is a string, or FastAPI validation items for 422. */
export interface ErrorBody {
  detail: unknown;
  /** Stable machine-readable name: an `ArclightError` code, a lowercased Fastify code, or `internal_error`. */
  code: string;
}

/** Longest `detail` taken from a framework message as it is; such messages quote the input (a whole URL segment). */
export const MAX_FRAMEWORK_DETAIL = 300;

/** Fewest characters of a quoted input a clipped message keeps; with less room, the message is cut to its start. */
const MIN_QUOTED_KEPT = 40;

/**
 * `text`, clipped to at most {@link MAX_FRAMEWORK_DETAIL} characters. Fastify's URL errors read `'<path>' <reason>`
 * (`'/api/rollouts/yyy…yyy' is exceeding the max param length`): the quoted path is shortened to its start, followed
 * by its length, so the reason at the end survives, as in `'/api/rollouts/yyy…' (1015 characters) is exceeding the
 * max param length`. A message with no quoted part is cut to its start.
 */
function clipped(text: string): string {
  if (text.length <= MAX_FRAMEWORK_DETAIL) return text;
  const open = text.indexOf("'");
  const close = text.lastIndexOf("'");
  if (open >= 0 && close > open) {
    const quoted = text.slice(open + 1, close);
    const note = ` (${quoted.length} characters)`;
    // "…'" and the note replace the quoted part's tail; everything outside the quotes stays.
    const room = MAX_FRAMEWORK_DETAIL - (text.length - quoted.length) - note.length - 1;
    if (room >= MIN_QUOTED_KEPT)
      return `${text.slice(0, open + 1)}${quoted.slice(0, room)}…'${note}${text.slice(close + 1)}`;
  }
  return quoteStart(text, MAX_FRAMEWORK_DETAIL - 40);
}

/** Longest request path quoted in a `detail` as it is (`Route GET <path> not found`). */
export const MAX_PATH_IN_DETAIL = 200;

/**
 * The path of a request URL, for quoting in an error's `detail`: without its query, and cut to its first
 * {@link MAX_PATH_IN_DETAIL} characters, followed by its length, when longer (`/no/such/yyy… (15009 characters)`).
 * @param url - the request URL as received (`request.url`), query included
 * @returns at most {@link MAX_PATH_IN_DETAIL} characters plus the note
 */
export function pathForDetail(url: string): string {
  const path = url.split("?", 1)[0] ?? "";
  return quoteStart(path, MAX_PATH_IN_DETAIL);
}

/**
 * Turns any thrown value into the status and body a server answers with. A Fastify 4xx message longer than
 * {@link MAX_FRAMEWORK_DETAIL} characters (it quotes the input: a 1,000-character URL segment) keeps its reason and
 * the start of the quoted input.
 */
export function toErrorResponse(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof ValidationFailed) return { status: 422, body: { detail: err.issues, code: err.code } };
  if (err instanceof ArclightError) {
    return { status: err.status, body: { ...err.fields, detail: err.message, code: err.code } };
  }
  const fastifyError = err as Partial<FastifyError>;
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    const detail =
      fastifyError.code === "FST_ERR_CTP_INVALID_JSON_BODY" || err instanceof SyntaxError
        ? `Invalid JSON body: ${fastifyError.message}`
        : (fastifyError.message ?? "Bad request");
    return { status, body: { detail: clipped(detail), code: fastifyError.code?.toLowerCase() ?? "bad_request" } };
  }
  return { status: 500, body: { detail: "Internal Server Error", code: "internal_error" } };
}

/** Body types a route may read, in the order a 415 names them. */
const READ_TYPES = ["application/json", "application/x-protobuf"];

/**
 * A 415's `detail`: the type sent (quoted by its start when long) and the types this route reads, e.g.
 * `Unsupported Media Type: content-type "text/csv"; send application/json`.
 */
function unsupportedMediaType(request: FastifyRequest): string {
  const sent = request.headers["content-type"];
  const what = sent === undefined ? "no content-type" : `content-type "${quoteStart(sent, 100)}"`;
  const read = READ_TYPES.filter((type) => request.server.hasContentTypeParser(type));
  return `Unsupported Media Type: ${what}; send ${read.length > 0 ? read.join(" or ") : "application/json"}`;
}

/**
 * `body` with OpenAI's error object added beside `detail` and `code`. OpenAI's SDKs read only `error.message` from an
 * error answer: without it the `openai` client reports `502 status code (no body)` and the detail is lost.
 * @param status - the answer's HTTP status
 * @param body - the gateway's error body; a non-string `detail` (422 items) becomes the message as JSON
 * @returns a new body: `body`'s fields plus `error`
 * @see https://platform.openai.com/docs/guides/error-codes (the error object's fields)
 */
export function withOpenaiError<B extends ErrorBody>(status: number, body: B): B & { error: OpenaiErrorObject } {
  const message = typeof body.detail === "string" ? body.detail : clipped(JSON.stringify(body.detail));
  return { ...body, error: openaiErrorObject(status, message, body.code) };
}

/** Fastify `setErrorHandler` callback: answers with {@link toErrorResponse}, logging 5xx with their stack. */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  answerError(err, request, reply, false);
}

/**
 * {@link errorHandler} for routes that OpenAI clients call (the gateway's LLM proxy): the body also carries OpenAI's
 * error object ({@link withOpenaiError}), so those clients show the detail.
 */
export function openaiClientErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  answerError(err, request, reply, true);
}

function answerError(err: unknown, request: FastifyRequest, reply: FastifyReply, openaiShape: boolean): void {
  const answer = toErrorResponse(err);
  const { body } = answer;
  if (body.code === "fst_err_ctp_invalid_media_type") body.detail = unsupportedMediaType(request);
  else if (body.code === "fst_err_ctp_body_too_large") {
    body.detail = `Request body is too large: the limit is ${request.routeOptions.bodyLimit} bytes`;
  }
  const { status } = answer;
  // A retryable error (503 store busy, 429) tells the client when to come back, as a header and in the body.
  const retryAfter = (body as { retry_after_seconds?: unknown }).retry_after_seconds;
  if (typeof retryAfter === "number") reply.header("retry-after", String(Math.ceil(retryAfter)));
  if (status >= 500) request.log.error({ err }, "request failed");
  else request.log.info({ status, code: body.code }, "request rejected");
  void reply.status(status).send(openaiShape ? withOpenaiError(status, body) : body);
}
