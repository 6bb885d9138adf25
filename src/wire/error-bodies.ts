/**
 * @module Error bodies of the model APIs arclight speaks: OpenAI's (as the OpenAI API and, with other `type` names,
 * vLLM write it) and Anthropic's. Their SDKs show a failure's message only when it stands where they look for it.
 */

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

/**
 * OpenAI's error object as the OpenAI API writes it.
 * @param status - HTTP status
 * @param message - what went wrong
 * @param code - a stable machine-readable code
 * @see https://platform.openai.com/docs/guides/error-codes
 */
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
 * OpenAI's error object as vLLM writes it: `type` an exception name, `code` the HTTP status.
 * @param status - HTTP status
 * @param message - what went wrong
 * @param param - the request field at fault (vLLM names `model` for an unknown model), else null
 * @see vLLM `ErrorResponse` / `create_error_response` (`vllm/entrypoints/openai/engine/protocol.py`)
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

/**
 * Anthropic's error body.
 * @param status - HTTP status
 * @param message - what went wrong
 * @returns `{type: "error", error: {type, message}}`
 * @see https://docs.anthropic.com/en/api/errors
 */
export function anthropicErrorBody(
  status: number,
  message: string,
): { type: "error"; error: { type: string; message: string } } {
  return { type: "error", error: { type: ANTHROPIC_TYPES[status] ?? "api_error", message } };
}
