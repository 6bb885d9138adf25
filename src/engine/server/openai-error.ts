/**
 * @module The engine server's error answers in vLLM's (OpenAI's) shape, `{"error": {message, type, param, code}}`,
 * so OpenAI clients talking to the engine directly, or through the gateway's proxy, show the message (openai-node 6
 * shows only "400 status code (no body)" without it). arclight's own `detail` and `code` are kept beside it for the
 * project's clients.
 * @see vLLM `ErrorResponse` / `create_error_response` (`vllm/entrypoints/openai/engine/protocol.py`)
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { toErrorResponse } from "../../http/error-handler.js";
import { vllmErrorObject } from "../../wire/error-bodies.js";
import { MODEL_NOT_SERVED } from "./model-check.js";

/**
 * The body of an engine error answer.
 * @param status - HTTP status
 * @param detail - arclight's `detail` (a string, or validation items)
 * @param code - arclight's stable code
 * @returns `{error: {message, type, param, code: status}, detail, code}`; `param` is "model" for an unknown model,
 *   else null
 */
export function openaiErrorBody(status: number, detail: unknown, code: string): Record<string, unknown> {
  const message = typeof detail === "string" ? detail : JSON.stringify(detail);
  return { error: vllmErrorObject(status, message, code === MODEL_NOT_SERVED ? "model" : null), detail, code };
}

/** Fastify `setErrorHandler` callback of the engine server: the shared handler's status, the body above. */
export function engineErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toErrorResponse(err);
  if (status >= 500) request.log.error({ err }, "request failed");
  else request.log.info({ status, code: body.code }, "request rejected");
  void reply.status(status).send(openaiErrorBody(status, body.detail, body.code));
}
