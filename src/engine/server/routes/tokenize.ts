/**
 * @module `POST /tokenize` and `POST /detokenize` in vLLM's shapes: `{count, max_model_len, tokens, token_strs: null}`
 * and `{prompt}`. `messages` are rendered by the chat template (generation prompt added unless
 * `add_generation_prompt: false`), so the ids equal a chat request's `prompt_token_ids`.
 * @see vLLM `vllm/entrypoints/serve/tokenize/protocol.py`
 */
import type { FastifyPluginAsync } from "fastify";
import { BadRequest } from "../../../protocol/errors.js";
import type { ServerContext } from "../context.js";
import { detokenizeRequestSchema, parseBody, tokenizeRequestSchema } from "../request-schemas.js";

/** Route plugin of `POST /tokenize` and `POST /detokenize`. */
export function tokenizeRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.post("/tokenize", async (request) => {
      const body = parseBody(tokenizeRequestSchema, request.body, "tokenize request");
      const tokens =
        "prompt" in body
          ? ctx.tokenizer.encode(body.prompt)
          : ctx.chatTemplate.render(body.messages, {
              tools: body.tools ?? [],
              addGenerationPrompt: body.add_generation_prompt ?? true,
            });
      return { count: tokens.length, max_model_len: ctx.engine.contextLength, tokens, token_strs: null };
    });
    app.post("/detokenize", async (request) => {
      const body = parseBody(detokenizeRequestSchema, request.body, "detokenize request");
      try {
        return { prompt: ctx.tokenizer.decode(body.tokens, false) };
      } catch (err) {
        throw new BadRequest(`detokenize request: ${(err as Error).message}`);
      }
    });
  };
}
