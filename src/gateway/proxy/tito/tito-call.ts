/**
 * @module One chat call of a `tito` (token in, token out) model: the prompt ids are built by the gateway
 * (`prompt-plan.ts`), sent to the upstream's `/completions` as a token-id prompt, and the answer goes back to the
 * agent as a chat completion (JSON or SSE, or the agent's translated API), recorded as one `model_request` event
 * whose ids are exactly those the upstream received and produced, with a `tito` field saying how the prompt was built.
 */
import { performance } from "node:perf_hooks";
import type { FastifyReply } from "fastify";
import { withOpenaiError } from "../../../http/error-handler.js";
import { BadRequest, type Model, quoteStart } from "../../../protocol/index.js";
import type { ChatInput } from "../../../wire/chat.js";
import { SSE_DONE, sseEvent } from "../../../wire/sse.js";
import type { TokenizerFolder } from "../../../wire/tokenizer-folder.js";
import type { ChatTool } from "../../../wire/tool-calls.js";
import { startCall } from "../call-lifetime.js";
import {
  type ProxyCall,
  type ProxyContext,
  proxyFields,
  type TrackedCall,
  upstreamRequestIds,
} from "../call-request.js";
import { type CallRecord, recordCall } from "../record-call.js";
import type { UpstreamAnswer } from "../upstream.js";
import { type AnswerParsers, chatAnswer, chatChunks, firstChoice } from "./chat-answer.js";
import { type PromptPlan, planPrompt } from "./prompt-plan.js";
import { recordedTurns, titoRecord } from "./recorded-turns.js";

type Json = Record<string, unknown>;

/** Sampling fields of a chat body that mean the same on `/completions` and are passed on unchanged. */
const SAMPLING_FIELDS = [
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "ignore_eos",
] as const;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The conversation of a chat body. @throws {BadRequest} when `messages` is not a non-empty list of objects */
function chatInput(body: Json): ChatInput {
  const { messages, tools, chat_template_kwargs: kwargs } = body;
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every(isJson)) {
    throw new BadRequest("`messages` must be a non-empty list of message objects");
  }
  return {
    messages,
    ...(Array.isArray(tools) && tools.length > 0 ? { tools: tools as Json[] } : {}),
    ...(isJson(kwargs) ? { templateKwargs: kwargs } : {}),
  };
}

/**
 * The `/completions` body: the planned ids as the prompt, the agent's sampling fields, the proxy's fields (model,
 * temperature, `return_token_ids`, logprobs), the end-of-turn id as a stop id, and special tokens kept in the text so
 * the tool parser sees `<tool_call>`. With no `max_tokens` from the agent, `null` lets vLLM use the remaining context
 * (its completions default, 16, would cut chats short).
 */
function upstreamBody(call: ProxyCall, ctx: ProxyContext, plan: PromptPlan, endOfTurnId: number): Json {
  const agent = call.body.value;
  const fields = proxyFields("completions", agent, call.mode, ctx.options);
  const body: Json = { model: fields.model, prompt: plan.promptIds };
  body.max_tokens = agent.max_completion_tokens ?? agent.max_tokens ?? null;
  for (const key of SAMPLING_FIELDS) if (agent[key] !== undefined) body[key] = agent[key];
  Object.assign(body, fields, { stop_token_ids: [endOfTurnId], skip_special_tokens: false, stream: false });
  if (body.logprobs === true) body.logprobs = 1;
  return body;
}

/**
 * Runs one chat call of a `tito` model and answers the agent on `reply`.
 * @param ctx - the proxy's shared state (store, lookups, upstream, tokenizer folders)
 * @param call - the agent's call (chat kind)
 * @param endpoints - the model's endpoints, the first one's `tokenizer`, `tool_parser` and `reasoning_parser` used
 * @throws {BadRequest} `messages` malformed, or the model's tokenizer folder unreadable
 * @throws {UpstreamFailed} / {UpstreamTimeout} no answer after every try (recorded as an error event)
 */
export async function forwardTitoCall(
  ctx: ProxyContext,
  call: ProxyCall,
  endpoints: readonly Model[],
  reply: FastifyReply,
): Promise<void> {
  const startedAt = performance.now();
  const model = endpoints[0]!;
  if (!model.tokenizer) throw new BadRequest(`model ${model.model} is registered as tito without a tokenizer folder`);
  const folder = ctx.tokenizers.get(model.tokenizer);
  const chat = chatInput(call.body.value);
  const plan = planPrompt(folder, chat, await recordedTurns(ctx.store, call.rolloutId, call.attemptId));
  const ids = upstreamRequestIds();
  const request: Json = { ...upstreamBody(call, ctx, plan, folder.endOfTurn.id), request_id: ids.idOf(0) };
  const requestText = JSON.stringify(request);
  // The same lifetime as every model call: agent hang-up, total deadline, drain deadline (`call-lifetime.ts`).
  const running = startCall(ctx.inflight, reply, ctx.options.upstreamTotalTimeoutMs);
  const { signal } = running;
  try {
    const answer = await ctx.upstream.send({
      path: "/completions",
      body: requestText,
      rolloutId: call.rolloutId,
      endpoints,
      stream: false,
      signal,
      attempt: (n) => ({ body: ids.bodyOf(requestText, n), requestId: ids.idOf(n) }),
    });
    const tracked: TrackedCall = {
      ...call,
      requestIds: {
        ...(call.agentRequestId === undefined ? {} : { agent_request_id: call.agentRequestId }),
        upstream_request_id: ids.idOf(answer.retryCount),
      },
      signal,
    };
    const base = { kind: "completions" as const, model: request.model as string, request, requestText, startedAt };
    if (!answer.ok) {
      const error = { message: answer.error.message, code: answer.error.code };
      const record: CallRecord = {
        ...base,
        endpoint: answer.endpoint,
        response: null,
        error,
        latencyMs: performance.now() - startedAt,
        httpStatus: answer.error.status,
        retryCount: answer.retryCount,
      };
      await recordCall(ctx.store, tracked, record, base, { tito: titoRecord(plan, {}) });
      throw answer.error;
    }
    const parsers = { tool: model.tool_parser ?? "hermes", reasoning: model.reasoning_parser ?? "none" } as const;
    await answerAgent(ctx, { call: tracked, plan, answer, parsers, folder, reply, base });
  } finally {
    running.end();
  }
}

/**
 * The text to parse: the response ids decoded with special tokens kept (the upstream's own text may have dropped
 * `<tool_call>`, a special token in many tokenizers), without the end-of-turn id that stopped it; the upstream's text
 * when a stop string ended the generation (its ids include the stop string, its text does not) or ids are missing.
 */
function generatedText(choice: Json, folder: TokenizerFolder): string | undefined {
  const ids = choice.token_ids;
  if (typeof choice.stop_reason === "string" || !Array.isArray(ids)) return undefined;
  const stopped = ids.length > 0 && ids[ids.length - 1] === folder.endOfTurn.id;
  return folder.tokenizer.decode(stopped ? ids.slice(0, -1) : ids, false);
}

/**
 * The chat answer of an upstream's 2xx completion, or why the tokenizer folder cannot read it: an id outside the
 * folder's vocabulary (a model whose output layer is larger than its tokenizer sampling a padding id, as Qwen2.5's
 * 151,936 rows vs 151,665 tokens allow, or a folder that is not the served model's) cannot be decoded, and the call
 * is then an unusable answer (502 `upstream_bad_answer`), recorded, not a crash that loses the capture.
 */
function readAnswer(
  parsed: Json,
  a: Answering,
  wantLogprobs: boolean,
  tools: readonly ChatTool[],
): { chatBody: Json | null; unreadable?: { message: string; code: string } } {
  try {
    const generated = generatedText(firstChoice(parsed), a.folder);
    return { chatBody: chatAnswer(parsed, a.parsers, wantLogprobs, generated, tools) };
  } catch (err) {
    const model = quoteStart(a.base.model, 200);
    const message = `Upstream of model ${model} answered ids the tokenizer folder cannot decode: ${(err as Error).message}`;
    return { chatBody: null, unreadable: { message, code: "upstream_bad_answer" } };
  }
}

/** What {@link answerAgent} needs. */
interface Answering {
  call: TrackedCall;
  plan: PromptPlan;
  answer: UpstreamAnswer;
  parsers: AnswerParsers;
  folder: TokenizerFolder;
  reply: FastifyReply;
  base: { kind: "completions"; model: string; request: Json; requestText: string; startedAt: number };
}

/** The agent's `tools`, the entries that are objects (`qwen3_coder` reads their parameter schemas). */
function agentTools(body: Json): ChatTool[] {
  return Array.isArray(body.tools) ? (body.tools.filter(isJson) as ChatTool[]) : [];
}

/** Records the call, then answers the agent (so the next turn finds this one recorded). */
async function answerAgent(ctx: ProxyContext, a: Answering): Promise<void> {
  const { call, answer, reply, base } = a;
  const text = answer.body!.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const ok = answer.statusCode >= 200 && answer.statusCode < 300 && isJson(parsed);
  const agentBody = call.body.value;
  const read = ok
    ? readAnswer(parsed as Json, a, agentBody.logprobs === true, agentTools(agentBody))
    : { chatBody: null };
  const chatBody = read.chatBody;
  const message = chatBody ? ((chatBody.choices as Json[])[0]!.message as Json) : {};
  const record: CallRecord = {
    ...base,
    endpoint: answer.endpoint,
    response: ok ? (parsed as Json) : null,
    error: read.unreadable ?? (ok ? null : (parsed ?? { message: text.slice(0, 4096) })),
    latencyMs: performance.now() - base.startedAt,
    httpStatus: read.unreadable ? 502 : answer.statusCode,
    retryCount: answer.retryCount,
    ...(read.unreadable ? { captureIncomplete: true, captureReasons: ["token_ids_undecodable" as const] } : {}),
  };
  const known = { ...base, response: parsed, responseText: text };
  await recordCall(ctx.store, call, record, known, { tito: titoRecord(a.plan, message) });
  if (read.unreadable) {
    call.log.warn({ endpoint: answer.endpoint.endpoint, code: read.unreadable.code }, "upstream answer unusable");
    const body = { detail: read.unreadable.message, code: read.unreadable.code };
    const sent = call.translation ? call.translation.error(502, body) : withOpenaiError(502, body);
    void reply.status(502).header("content-type", "application/json").send(sent);
    return;
  }
  if (!chatBody) {
    const body = call.translation ? call.translation.error(answer.statusCode, parsed) : answer.body;
    void reply.status(answer.statusCode).header("content-type", "application/json").send(body);
    return;
  }
  if (agentBody.stream === true) sendStream(call, chatBody, reply);
  else void reply.status(200).send(call.translation ? call.translation.body(chatBody) : chatBody);
}

/** The answer as SSE: chat chunks, or the translated API's events. */
function sendStream(call: ProxyCall, chatBody: Json, reply: FastifyReply): void {
  const options = call.body.value.stream_options;
  const includeUsage = isJson(options) && options.include_usage === true;
  const chunks = chatChunks(chatBody, includeUsage || call.translation !== undefined);
  const t = call.translation;
  const text = t
    ? chunks.map((chunk) => t.chunk(chunk)).join("") + t.end(chatBody)
    : chunks.map((chunk) => sseEvent(JSON.stringify(chunk))).join("") + sseEvent(SSE_DONE);
  void reply
    .status(200)
    .header("content-type", t?.streamContentType ?? "text/event-stream; charset=utf-8")
    .header("cache-control", "no-cache")
    .send(text);
}
