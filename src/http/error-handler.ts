/** @module The one error handler of the gateway and engine server: every error becomes JSON `{ detail, code }`. */
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

/** `text` clipped to {@link MAX_FRAMEWORK_DETAIL}: a quoted input is shortened so the reason after it survives. */
function clipped(text: string): string {
  if (text.length <= MAX_FRAMEWORK_DETAIL) return text;
  const open = text.indexOf("'");
  const close = text.lastIndexOf("'");
  if (open >= 0 && close > open) {
    const quoted = text.slice(open + 1, close);
    const note = ` (${quoted.length} characters)`;
    const room = MAX_FRAMEWORK_DETAIL - (text.length - quoted.length) - note.length - 1;
    if (room >= MIN_QUOTED_KEPT)
      return `${text.slice(0, open + 1)}${quoted.slice(0, room)}…'${note}${text.slice(close + 1)}`;
  }
  return quoteStart(text, MAX_FRAMEWORK_DETAIL - 40);
}

/** Longest request path quoted in a `detail` as it is (`Route GET <path> not found`). */
export const MAX_PATH_IN_DETAIL = 200;

/** A request URL's path without its query, cut to {@link MAX_PATH_IN_DETAIL} characters for a `detail`. */
export function pathForDetail(url: string): string {
  const path = url.split("?", 1)[0] ?? "";
  return quoteStart(path, MAX_PATH_IN_DETAIL);
}

/** Turns any thrown value into the status and body a server answers with (STYLE.md §5). */
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

/** A 415's `detail`: the type sent and the types this route reads. */
function unsupportedMediaType(request: FastifyRequest): string {
  const sent = request.headers["content-type"];
  const what = sent === undefined ? "no content-type" : `content-type "${quoteStart(sent, 100)}"`;
  const read = READ_TYPES.filter((type) => request.server.hasContentTypeParser(type));
  return `Unsupported Media Type: ${what}; send ${read.length > 0 ? read.join(" or ") : "application/json"}`;
}

/**
 * `body` plus OpenAI's `error` object: OpenAI's SDKs read only `error.message`, so without it the detail is lost.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function withOpenaiError<B extends ErrorBody>(status: number, body: B): B & { error: OpenaiErrorObject } {
  const message = typeof body.detail === "string" ? body.detail : clipped(JSON.stringify(body.detail));
  return { ...body, error: openaiErrorObject(status, message, body.code) };
}

/** Fastify `setErrorHandler` callback: answers with {@link toErrorResponse}, logging 5xx with their stack. */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  answerError(err, request, reply, false);
}

/** {@link errorHandler} for routes OpenAI clients call: the body also carries {@link withOpenaiError}'s object. */
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
  const retryAfter = (body as { retry_after_seconds?: unknown }).retry_after_seconds;
  if (typeof retryAfter === "number") reply.header("retry-after", String(Math.ceil(retryAfter)));
  if (status >= 500) request.log.error({ err }, "request failed");
  else request.log.info({ status, code: body.code }, "request rejected");
  void reply.status(status).send(openaiShape ? withOpenaiError(status, body) : body);
}
