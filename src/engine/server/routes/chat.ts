/**
 * @module `POST /v1/chat/completions`: render the chat with the chat template, generate (n choices in one engine call),
 * answer in vLLM's shape, non-stream or SSE.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { disconnectSignal, openSse } from "../../../wire/sse.js";
import type { GenerationRequest } from "../../engine.js";
import { type AnswerIdentity, type ChatRenderOptions, chatBody } from "../chat-response.js";
import { ChatChoiceStream, chatUsageChunk } from "../chat-stream.js";
import { POLICY_VERSION_HEADER, responseId, runGeneration, type ServedModel, type ServerContext } from "../context.js";
import { servedModel } from "../model-check.js";
import { type ChatRequest, chatRequestSchema, parseBody } from "../request-schemas.js";
import { samplingParams } from "../sampling.js";

/** A parsed chat request, ready to generate. */
interface PreparedChat {
  body: ChatRequest;
  /** The model the request named: its engine generates. */
  model: ServedModel;
  promptTokenIds: number[];
  requests: GenerationRequest[];
  options: ChatRenderOptions;
  identity: AnswerIdentity;
}

/**
 * Parses, renders and checks one request.
 * @throws {BadRequest} for a bad body or a prompt that does not fit
 * @throws {ModelNotServed} for a model name not served
 */
function prepare(ctx: ServerContext, request: FastifyRequest): PreparedChat {
  const body = parseBody(chatRequestSchema, request.body, "chat completion request");
  const model = servedModel(ctx, body.model);
  const { tokenizer, chatTemplate } = ctx;
  const parseTools = (body.tools?.length ?? 0) > 0 && body.tool_choice !== "none";
  const promptTokenIds = chatTemplate.render(body.messages, { tools: parseTools ? (body.tools ?? []) : [] });
  const defaultStopTokenIds = [...chatTemplate.stopTokenIds];
  const context = {
    promptTokens: promptTokenIds.length,
    contextLength: model.engine.contextLength,
    defaultStopTokenIds,
    promptWord: "messages" as const,
  };
  const requests = Array.from({ length: body.n ?? 1 }, (_, choice) => ({
    promptTokenIds,
    sampling: samplingParams(body, context, choice),
  }));
  const options: ChatRenderOptions = {
    tokenizer,
    toolCalls: chatTemplate.toolCalls,
    stop: requests[0]?.sampling.stop ?? [],
    parseTools,
    toolCallParser: ctx.toolCallParser,
    reasoningParser: ctx.reasoningParser,
    tools: parseTools ? (body.tools ?? []) : [],
    returnTokenIds: body.return_token_ids === true,
    logprobs: body.logprobs === true,
    defaultStopTokenIds,
  };
  const identity = {
    id: responseId("chatcmpl", request),
    created: Math.floor(Date.now() / 1000),
    model: model.modelName,
  };
  return { body, model, promptTokenIds, requests, options, identity };
}

/** Non-stream answer. */
async function answer(ctx: ServerContext, chat: PreparedChat, reply: FastifyReply) {
  const signal = disconnectSignal(reply.raw);
  const { results, policyVersion } = await runGeneration(ctx, chat.model, chat.requests, { signal });
  void reply.header(POLICY_VERSION_HEADER, String(policyVersion));
  return chatBody(chat.identity, chat.promptTokenIds, results, policyVersion, chat.options);
}

/** SSE answer: headers and role chunks once admitted, then one chunk per id, finishing, usage, `[DONE]`. */
async function stream(ctx: ServerContext, chat: PreparedChat, reply: FastifyReply): Promise<void> {
  const signal = disconnectSignal(reply.raw);
  const choices = chat.requests.map((_, i) => new ChatChoiceStream(i, chat.identity, chat.options));
  let sse: ReturnType<typeof openSse> | undefined;
  const onAdmitted = (policyVersion: number): void => {
    sse = openSse(reply.hijack().raw, { [POLICY_VERSION_HEADER]: String(policyVersion) });
    for (const choice of choices) sse.send(choice.roleChunk(chat.promptTokenIds, policyVersion));
  };
  const onToken = (index: number, token: { tokenId: number; logprob: number }): void => {
    const chunk = choices[index]?.push(token);
    if (chunk) sse?.send(chunk);
  };
  try {
    const { results } = await runGeneration(ctx, chat.model, chat.requests, { signal, onAdmitted, onToken });
    for (const [i, result] of results.entries()) sse?.send(choices[i]?.finish(result));
    if (chat.body.stream_options?.include_usage) {
      const completionTokens = results.reduce((sum, r) => sum + r.tokenIds.length, 0);
      sse?.send(chatUsageChunk(chat.identity, chat.promptTokenIds.length, completionTokens));
    }
    sse?.done();
  } catch (err) {
    if (sse === undefined) throw err; // not admitted yet: the error handler answers
    reply.log.error({ err }, "chat stream failed");
    sse.fail(err instanceof Error ? err.message : String(err));
  }
}

/** Route plugin of `POST /v1/chat/completions`. */
export function chatRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.post("/v1/chat/completions", async (request, reply) => {
      const chat = prepare(ctx, request);
      if (chat.body.stream) return stream(ctx, chat, reply);
      return answer(ctx, chat, reply);
    });
  };
}
