/**
 * @module Request bodies of the engine server's OpenAI-compatible routes as zod schemas. Unknown OpenAI fields are
 * accepted and ignored (clients send many); a body that breaks a schema is a 400 naming the bad field, as vLLM answers.
 */
import { z } from "zod";
import { BadRequest, ValidationFailed } from "../../protocol/errors.js";
import { parseOrThrow } from "../../protocol/validate.js";

const textPart = z.object({ type: z.string(), text: z.string().optional() });
const content = z.union([z.string(), z.null(), z.array(textPart)]);

const toolCall = z.object({
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

/** One chat message (roles system, developer — OpenAI's newer system role, rendered as system — user, assistant, tool). */
export const messageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content }),
  z.object({ role: z.literal("developer"), content }),
  z.object({ role: z.literal("user"), content }),
  z.object({
    role: z.literal("assistant"),
    content: content.optional().default(null),
    tool_calls: z.array(toolCall).optional(),
  }),
  z.object({ role: z.literal("tool"), content, tool_call_id: z.string().optional() }),
]);

/** One tool (OpenAI `tools[i]`). */
export const toolSchema = z.object({
  type: z.literal("function").optional(),
  function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.unknown().optional() }),
});

/** Sampling fields shared by chat and completions. */
const sampling = {
  model: z.string().optional(),
  temperature: z.number().min(0).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  /** 0 or -1 disables top-k (vLLM accepts both). */
  top_k: z.number().int().min(-1).optional(),
  max_tokens: z.number().int().min(1).nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  stop_token_ids: z.array(z.number().int().min(0)).nullish(),
  seed: z.number().int().nullish(),
  n: z.number().int().min(1).max(16).optional(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  return_token_ids: z.boolean().nullish(),
};

/** `POST /v1/chat/completions` body. */
export const chatRequestSchema = z.object({
  ...sampling,
  messages: z.array(messageSchema).min(1),
  tools: z.array(toolSchema).nullish(),
  tool_choice: z.unknown().optional(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(0, "top_logprobs > 0 is not supported by the embedded engine").nullish(),
});

/** `POST /v1/completions` body: `prompt` is a string, a list of ids, or a list of either. */
export const completionRequestSchema = z.object({
  ...sampling,
  prompt: z.union([
    z.string(),
    z.array(z.number().int().min(0)).min(1),
    z.array(z.string()).min(1),
    z.array(z.array(z.number().int().min(0)).min(1)).min(1),
  ]),
  /** An integer n of alternatives (only 0 is computed, with the sampled token); `true` reads as 1 (as vLLM). */
  logprobs: z.union([z.number().int().min(0), z.boolean()]).nullish(),
  echo: z.literal(false, "echo is not supported").nullish(),
});

/** `POST /tokenize` body: a `prompt`, or `messages` rendered by the chat template. */
export const tokenizeRequestSchema = z.union([
  z.object({ model: z.string().optional(), prompt: z.string(), add_special_tokens: z.boolean().optional() }),
  z.object({
    model: z.string().optional(),
    messages: z.array(messageSchema).min(1),
    tools: z.array(toolSchema).nullish(),
    add_generation_prompt: z.boolean().optional(),
  }),
]);

/** `POST /detokenize` body. */
export const detokenizeRequestSchema = z.object({ model: z.string().optional(), tokens: z.array(z.number().int()) });

/** `POST /v1/load_weights` body: a checkpoint directory written by `Engine.saveCheckpoint`. */
export const loadWeightsRequestSchema = z.object({ path: z.string().min(1) });

/** A parsed `POST /v1/chat/completions` body. */
export type ChatRequest = z.infer<typeof chatRequestSchema>;
/** A parsed `POST /v1/completions` body. */
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

/**
 * Parses a request body.
 * @param what - the route, for the message, e.g. "chat completion request"
 * @throws {BadRequest} (400) naming every bad field, e.g. `chat completion request: messages.0.role: Invalid input`
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  try {
    return parseOrThrow(schema, body, what);
  } catch (err) {
    if (err instanceof ValidationFailed) throw new BadRequest(err.message);
    throw err;
  }
}
