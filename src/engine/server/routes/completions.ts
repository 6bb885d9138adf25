/**
 * @module `POST /v1/completions`: a string, token-id, or list prompt → one engine call for every (prompt, choice),
 * answered in vLLM's shape, non-stream or SSE. A string prompt is encoded as bytes (no special ids); a token-id
 * prompt is used as is and echoed exactly in `prompt_token_ids`.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { BadRequest } from "../../../protocol/errors.js";
import { disconnectSignal, openSse } from "../../../wire/sse.js";
import type { GenerationRequest } from "../../engine.js";
import type { AnswerIdentity } from "../chat-response.js";
import { chatUsageChunk } from "../chat-stream.js";
import { CompletionChoiceStream, type CompletionRenderOptions, completionBody } from "../completion-response.js";
import { POLICY_VERSION_HEADER, responseId, runGeneration, type ServedModel, type ServerContext } from "../context.js";
import { servedModel } from "../model-check.js";
import { type CompletionRequest, completionRequestSchema, parseBody } from "../request-schemas.js";
import { samplingParams } from "../sampling.js";

/** vLLM's default `max_tokens` of `/v1/completions`. */
const DEFAULT_MAX_TOKENS = 16;

interface PreparedCompletion {
  body: CompletionRequest;
  /** The model the request named: its engine generates. */
  model: ServedModel;
  prompts: number[][];
  requests: GenerationRequest[];
  options: CompletionRenderOptions;
  identity: AnswerIdentity;
}

/** The prompts of a request as token ids. @throws {BadRequest} for an id outside the vocabulary */
function promptIds(ctx: ServerContext, prompt: CompletionRequest["prompt"]): number[][] {
  const list: (string | number[])[] =
    typeof prompt === "string"
      ? [prompt]
      : typeof prompt[0] === "number"
        ? [prompt as number[]]
        : (prompt as (string | number[])[]);
  return list.map((p) => {
    if (typeof p === "string") return ctx.tokenizer.encode(p);
    const bad = p.find((id) => id >= ctx.tokenizer.vocabSize);
    if (bad !== undefined)
      throw new BadRequest(`prompt token id ${bad} is out of range (vocabulary ${ctx.tokenizer.vocabSize})`);
    return p;
  });
}

function prepare(ctx: ServerContext, request: FastifyRequest): PreparedCompletion {
  const body = parseBody(completionRequestSchema, request.body, "completion request");
  const model = servedModel(ctx, body.model);
  const prompts = promptIds(ctx, body.prompt);
  const defaultStopTokenIds = [ctx.tokenizer.eosId];
  const n = body.n ?? 1;
  const requests = prompts.flatMap((ids) => {
    const context = {
      promptTokens: ids.length,
      contextLength: model.engine.contextLength,
      defaultMaxTokens: DEFAULT_MAX_TOKENS,
      defaultStopTokenIds,
      promptWord: "prompt" as const,
    };
    return Array.from({ length: n }, (_, choice) => ({
      promptTokenIds: ids,
      sampling: samplingParams(body, context, choice),
    }));
  });
  const options: CompletionRenderOptions = {
    tokenizer: ctx.tokenizer,
    stop: requests[0]?.sampling.stop ?? [],
    returnTokenIds: body.return_token_ids === true,
    logprobs: body.logprobs != null,
    defaultStopTokenIds,
  };
  const identity = { id: responseId("cmpl", request), created: Math.floor(Date.now() / 1000), model: model.modelName };
  return { body, model, prompts, requests, options, identity };
}

async function answer(ctx: ServerContext, completion: PreparedCompletion, reply: FastifyReply) {
  const { results, policyVersion } = await runGeneration(ctx, completion.model, completion.requests, {
    signal: disconnectSignal(reply.raw),
  });
  void reply.header(POLICY_VERSION_HEADER, String(policyVersion));
  const promptTokens = completion.prompts.reduce((sum, p) => sum + p.length, 0);
  return completionBody(completion.identity, results, promptTokens, policyVersion, completion.options);
}

async function stream(ctx: ServerContext, completion: PreparedCompletion, reply: FastifyReply): Promise<void> {
  const { requests, identity, options } = completion;
  let choices: CompletionChoiceStream[] = [];
  let sse: ReturnType<typeof openSse> | undefined;
  const onAdmitted = (policyVersion: number): void => {
    sse = openSse(reply.hijack().raw, { [POLICY_VERSION_HEADER]: String(policyVersion) });
    choices = requests.map((r, i) => new CompletionChoiceStream(i, identity, r.promptTokenIds, policyVersion, options));
  };
  const onToken = (index: number, token: { tokenId: number; logprob: number }): void => {
    const chunk = choices[index]?.push(token);
    if (chunk) sse?.send(chunk);
  };
  try {
    const { results } = await runGeneration(ctx, completion.model, requests, {
      signal: disconnectSignal(reply.raw),
      onAdmitted,
      onToken,
    });
    for (const [i, result] of results.entries()) sse?.send(choices[i]?.finish(result));
    if (completion.body.stream_options?.include_usage) {
      const promptTokens = completion.prompts.reduce((sum, p) => sum + p.length, 0);
      const completionTokens = results.reduce((sum, r) => sum + r.tokenIds.length, 0);
      sse?.send({ ...chatUsageChunk(identity, promptTokens, completionTokens), object: "text_completion" });
    }
    sse?.done();
  } catch (err) {
    if (sse === undefined) throw err;
    reply.log.error({ err }, "completion stream failed");
    sse.fail(err instanceof Error ? err.message : String(err));
  }
}

/** Route plugin of `POST /v1/completions`. */
export function completionRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.post("/v1/completions", async (request, reply) => {
      const completion = prepare(ctx, request);
      if (completion.body.stream) return stream(ctx, completion, reply);
      return answer(ctx, completion, reply);
    });
  };
}
