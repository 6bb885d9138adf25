/** @module OpenAI (and vLLM) and Anthropic error bodies, shaped where each SDK looks for the message. */

/** OpenAI's error object, under `error` in an error answer. */
export interface OpenaiErrorObject {
  message: string;
  type: string;
  param: string | null;
  /** A stable string code (OpenAI API), or the HTTP status (vLLM). */
  code: string | number;
}

/** OpenAI API error `type` by HTTP status; other 4xx are `invalid_request_error`, 5xx `server_error`. */
const OPENAI_TYPES: Readonly<Record<number, string>> = {
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  409: "conflict_error",
  429: "rate_limit_error",
};

/** OpenAI's error object as the OpenAI API writes it. @see https://platform.openai.com/docs/guides/error-codes */
export function openaiErrorObject(status: number, message: string, code: string): OpenaiErrorObject {
  const type = OPENAI_TYPES[status] ?? (status >= 500 ? "server_error" : "invalid_request_error");
  return { message, type, param: null, code };
}

/** vLLM's error `type` for each status it answers with. */
const VLLM_TYPES: Readonly<Record<number, string>> = {
  400: "BadRequestError",
  401: "UnauthorizedError",
  404: "NotFoundError",
  409: "ConflictError",
  413: "BadRequestError",
  422: "BadRequestError",
  429: "TooManyRequestsError",
  500: "InternalServerError",
  501: "NotImplementedError",
  503: "ServiceUnavailableError",
};

/**
 * OpenAI's error object as vLLM writes it: `type` an exception name, `code` the HTTP status, `param` the faulty field.
 * @see vLLM `create_error_response` (`vllm/entrypoints/openai/engine/protocol.py`)
 */
export function vllmErrorObject(status: number, message: string, param: string | null = null): OpenaiErrorObject {
  const type = VLLM_TYPES[status] ?? (status >= 500 ? "InternalServerError" : "BadRequestError");
  return { message, type, param, code: status };
}

/** Anthropic's error `type` by HTTP status; others are `api_error`. */
const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

/** Anthropic's `{type: "error", error: {type, message}}`. @see https://docs.anthropic.com/en/api/errors */
export function anthropicErrorBody(
  status: number,
  message: string,
): { type: "error"; error: { type: string; message: string } } {
  return { type: "error", error: { type: ANTHROPIC_TYPES[status] ?? "api_error", message } };
}
