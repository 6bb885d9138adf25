/**
 * @module What the fake vLLM generates for one request (a plan of steps, each with its ids and stream delta), and
 * that plan rendered as a non-stream body or as SSE chunks, in vLLM v0.19's shapes (facts in `fake-vllm-shapes.ts`
 * and `fake-vllm.ts`).
 */
import type { FakeVllmBehaviour } from "./fake-vllm-behaviour.js";
import {
  CREATED,
  chatLogprob,
  EOS_ID,
  type FakeToken,
  promptIdsOf,
  pyJsonDumps,
  requestHex,
  responseIdOf,
  specialToken,
  TOOL_CALL_CLOSE_ID,
  TOOL_CALL_OPEN_ID,
  tokenize,
  usageOf,
} from "./fake-vllm-shapes.js";

type Json = Record<string, unknown>;

/** One engine step as the stream shows it: its ids and (chat) its delta. */
export interface Step {
  tokens: FakeToken[];
  delta: Json;
}

/** A whole generation. */
export interface Plan {
  promptIds: number[];
  steps: Step[];
  finishReason: "stop" | "length" | "tool_calls";
  content: string | null;
  toolCalls: Json[];
  wantLogprobs: boolean;
  dropIds: Set<number>;
  dropLogprobs: Set<number>;
  skipChunks: Set<number>;
}

function textSteps(tokens: FakeToken[], perChunk: number): Step[] {
  const steps: Step[] = [];
  for (let i = 0; i < tokens.length; i += perChunk) {
    const group = tokens.slice(i, i + perChunk);
    steps.push({ tokens: group, delta: { content: group.map((t) => t.text).join("") } });
  }
  return steps;
}

/** Hermes tool-call steps: tags and JSON scaffolding as `delta: {}`, the name once, then argument pieces. */
function toolSteps(
  body: Json,
  calls: NonNullable<FakeVllmBehaviour["toolCalls"]>,
): { steps: Step[]; toolCalls: Json[] } {
  const steps: Step[] = [];
  const toolCalls: Json[] = [];
  calls.forEach((call, k) => {
    const id = `chatcmpl-tool-${requestHex(body, `tool${k}`)}`;
    const args = pyJsonDumps(call.arguments);
    toolCalls.push({ id, type: "function", function: { name: call.name, arguments: args } });
    if (k > 0) steps.push(...tokenize("\n").map((t) => ({ tokens: [t], delta: {} })));
    steps.push({ tokens: [specialToken(TOOL_CALL_OPEN_ID, "<tool_call>")], delta: {} });
    const head = tokenize(`\n{"name": "${call.name}", "arguments": `);
    head.forEach((t, i) => {
      const named = { content: null, tool_calls: [{ id, type: "function", index: k, function: { name: call.name } }] };
      steps.push({ tokens: [t], delta: i === head.length - 1 ? named : {} });
    });
    for (const t of tokenize(args)) {
      const piece = { content: null, tool_calls: [{ index: k, function: { arguments: t.text } }] };
      steps.push({ tokens: [t], delta: t.text === "" ? {} : piece });
    }
    steps.push(...tokenize("}\n").map((t) => ({ tokens: [t], delta: {} })));
    steps.push({ tokens: [specialToken(TOOL_CALL_CLOSE_ID, "</tool_call>")], delta: {} });
  });
  return { steps, toolCalls };
}

/** Builds the plan of one request under a behaviour. */
export function buildPlan(kind: "chat" | "completions", body: Json, b: FakeVllmBehaviour): Plan {
  const wantLogprobs = kind === "chat" ? body.logprobs === true : body.logprobs != null && body.logprobs !== false;
  const base = {
    promptIds: b.promptTokenIds ?? promptIdsOf(body),
    wantLogprobs,
    dropIds: new Set(b.dropTokenIdsAt ?? []),
    dropLogprobs: new Set(b.dropLogprobsAt ?? []),
    skipChunks: new Set(b.skipChunksAt ?? []),
  };
  const eos = specialToken(EOS_ID, kind === "chat" ? "<|im_end|>" : "</s>");
  if (kind === "chat" && b.toolCalls && b.toolCalls.length > 0) {
    const { steps, toolCalls } = toolSteps(body, b.toolCalls);
    steps.push({ tokens: [eos], delta: {} });
    return { ...base, steps, finishReason: "tool_calls", content: null, toolCalls };
  }
  const maxTokens = (body.max_completion_tokens ?? body.max_tokens ?? (kind === "completions" ? 16 : 1e9)) as number;
  let tokens = tokenize(b.content ?? "Hello!");
  const byLength = tokens.length >= maxTokens;
  if (byLength) tokens = tokens.slice(0, maxTokens);
  const steps = textSteps(tokens, b.tokensPerChunk ?? 1);
  if (!byLength) steps.push({ tokens: [eos], delta: { content: "" } });
  const content = tokens.map((t) => t.text).join("");
  return { ...base, steps, finishReason: byLength ? "length" : "stop", content, toolCalls: [] };
}

function allTokens(plan: Plan): FakeToken[] {
  return plan.steps.flatMap((s) => s.tokens);
}

function header(kind: "chat" | "completions", body: Json, object: string): Json {
  return { id: responseIdOf(kind, body), object, created: CREATED, model: body.model };
}

/** The non-stream `/v1/chat/completions` body. */
export function chatBody(body: Json, plan: Plan): Json {
  const tokens = allTokens(plan);
  const ids = plan.dropIds.size > 0 ? null : tokens.map((t) => t.id);
  const message = {
    role: "assistant",
    content: plan.content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
    tool_calls: plan.toolCalls,
    reasoning: null,
  };
  const logprobs = plan.wantLogprobs ? { content: tokens.map(chatLogprob) } : null;
  return {
    ...header("chat", body, "chat.completion"),
    choices: [{ index: 0, message, logprobs, finish_reason: plan.finishReason, stop_reason: null, token_ids: ids }],
    service_tier: null,
    system_fingerprint: null,
    usage: usageOf(plan.promptIds.length, tokens.length),
    prompt_logprobs: null,
    prompt_token_ids: plan.promptIds,
    kv_transfer_params: null,
  };
}

function wantsUsage(body: Json): boolean {
  const options = body.stream_options as Json | undefined;
  return options?.include_usage === true;
}

/** The SSE chunks (JSON objects, `[DONE]` excluded) of a streamed `/v1/chat/completions` call. */
export function chatChunks(body: Json, plan: Plan): Json[] {
  const head = header("chat", body, "chat.completion.chunk");
  const role = { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null };
  const chunks: Json[] = [{ ...head, choices: [role], prompt_token_ids: plan.promptIds }];
  plan.steps.forEach((step, i) => {
    const last = i === plan.steps.length - 1;
    if (plan.skipChunks.has(i) && !last) return;
    const logprobs = plan.wantLogprobs && !plan.dropLogprobs.has(i) ? { content: step.tokens.map(chatLogprob) } : null;
    const ids = plan.dropIds.has(i) ? null : step.tokens.map((t) => t.id);
    const choice: Json = { index: 0, delta: step.delta, logprobs, finish_reason: last ? plan.finishReason : null };
    if (last) choice.stop_reason = null;
    choice.token_ids = ids;
    chunks.push({ ...head, choices: [choice] });
  });
  if (wantsUsage(body)) {
    const usage = usageOf(plan.promptIds.length, allTokens(plan).length);
    delete usage.prompt_tokens_details;
    chunks.push({ ...head, choices: [], usage });
  }
  return chunks;
}

/** Completions logprobs of some tokens; `offset` is the text length already sent. */
function completionLogprobs(tokens: FakeToken[], offset: number): Json {
  const textOffset: number[] = [];
  let at = offset;
  for (const t of tokens) {
    textOffset.push(at);
    at += t.tokenString.length;
  }
  return {
    text_offset: textOffset,
    token_logprobs: tokens.map((t) => t.logprob),
    tokens: tokens.map((t) => t.tokenString),
    top_logprobs: tokens.map((t) => ({ [t.tokenString]: t.logprob })),
  };
}

/** The non-stream `/v1/completions` body. */
export function completionBody(body: Json, plan: Plan): Json {
  const tokens = allTokens(plan);
  const choice = {
    index: 0,
    text: plan.content,
    logprobs: plan.wantLogprobs ? completionLogprobs(tokens, 0) : null,
    finish_reason: plan.finishReason,
    stop_reason: null,
    token_ids: plan.dropIds.size > 0 ? null : tokens.map((t) => t.id),
    prompt_logprobs: null,
    prompt_token_ids: plan.promptIds,
  };
  return {
    ...header("completions", body, "text_completion"),
    choices: [choice],
    service_tier: null,
    system_fingerprint: null,
    usage: usageOf(plan.promptIds.length, tokens.length),
    kv_transfer_params: null,
  };
}

/** The SSE chunks of a streamed `/v1/completions` call (v0.19.0: every key, `"usage": null` included). */
export function completionChunks(body: Json, plan: Plan): Json[] {
  const head = header("completions", body, "text_completion");
  const chunks: Json[] = [];
  let offset = 0;
  plan.steps.forEach((step, i) => {
    const last = i === plan.steps.length - 1;
    const text = step.tokens.map((t) => t.text).join("");
    const logprobs = plan.wantLogprobs && !plan.dropLogprobs.has(i) ? completionLogprobs(step.tokens, offset) : null;
    offset += step.tokens.reduce((n, t) => n + t.tokenString.length, 0);
    const choice = {
      index: 0,
      text,
      logprobs,
      finish_reason: last ? plan.finishReason : null,
      stop_reason: null,
      prompt_token_ids: i === 0 ? plan.promptIds : null,
      token_ids: plan.dropIds.has(i) ? null : step.tokens.map((t) => t.id),
    };
    chunks.push({ ...head, choices: [choice], usage: null });
  });
  if (wantsUsage(body)) {
    const usage = usageOf(plan.promptIds.length, allTokens(plan).length);
    delete usage.prompt_tokens_details;
    chunks.push({ ...head, choices: [], usage });
  }
  return chunks;
}
