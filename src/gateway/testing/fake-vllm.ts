/**
 * @module A fake vLLM v0.19 OpenAI-compatible server for tests and benches: a real HTTP server on 127.0.0.1 answering
 * `/v1/chat/completions` and `/v1/completions`, non-stream and SSE, in vLLM's exact shapes (see
 * `fake-vllm-shapes.ts`), with programmable misbehaviour. It records every body it receives.
 *
 * SSE facts (vLLM v0.19.0): `Content-Type: text/event-stream; charset=utf-8`; events are only `data: <json>\n\n`,
 * ending with `data: [DONE]\n\n`. Chat: a role chunk `delta: {role: "assistant", content: ""}` with top-level
 * `prompt_token_ids` and no `token_ids` key, then one chunk per step with `token_ids` (+ `logprobs.content` when asked),
 * `delta: {}` for tokens a tool parser hides, the finishing chunk with `finish_reason`, `stop_reason` and the EOS id;
 * chunks are dumped with `exclude_unset` (no `stop_reason` key before the last). Completions chunks carry every key,
 * `"usage": null` included, and `prompt_token_ids` only in the first chunk. `include_usage` adds a last chunk
 * `{…, choices: [], usage: {prompt_tokens, total_tokens, completion_tokens}}`. A mid-stream failure is one
 * `data: {"error": {...}}` event then `data: [DONE]`.
 *
 * With `servedModel` set, the fake also keeps vLLM's model registry: the runtime LoRA and sleep-mode routes, and a 404
 * for a model name that is neither served nor a loaded adapter (see `fake-vllm-admin.ts`).
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type AdminAnswer, FakeVllmAdmin, type FakeVllmServerFlags } from "./fake-vllm-admin.js";
import type { FakeVllmBehaviour } from "./fake-vllm-behaviour.js";
import { buildPlan, chatBody, chatChunks, completionBody, completionChunks, type Plan } from "./fake-vllm-plan.js";
import { errorBody } from "./fake-vllm-shapes.js";

/** How the fake answers (declared in fake-vllm-behaviour.ts, which the plan builder shares). */
export type { FakeVllmBehaviour } from "./fake-vllm-behaviour.js";

/** One body the fake received. */
export interface ReceivedCall {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
  /** The body exactly as received. */
  text: string;
  /** Whether the fake was asleep (`POST /sleep`) when the call arrived. */
  sleeping: boolean;
  /** Folder of the adapter the call's `model` named when it arrived; null: the base model or no registry. */
  adapterPath: string | null;
  /** Folder the base weights were last loaded from when the call arrived (null: not known to the fake). */
  weightsPath: string | null;
}

/** Server settings of a fake, fixed at start. */
export interface FakeVllmOptions {
  /**
   * The served base model name (vLLM's `--served-model-name`). Set: the fake keeps vLLM's model registry (runtime LoRA
   * routes, sleep routes, 404 for an unknown model). Unset: every model name is accepted and those routes are 404.
   */
  servedModel?: string;
  /** Fold every token id below this (a small model's vocabulary); default: the fake tokenizer's ids as they are. */
  vocabSize?: number;
  /** The routes mounted and the start weights, as `vllm serve` flags decide (with `servedModel`); omitted: all on. */
  serverFlags?: FakeVllmServerFlags;
  /** Port to listen on; default 0 (a free one). */
  port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Called with every call and admin call as it is answered (e.g. to append it to a file). */
  onRecord?: (record: Record<string, unknown>) => void;
}

/** A running fake vLLM server. */
export class FakeVllm {
  /** Every call received, in arrival order. */
  readonly received: ReceivedCall[] = [];
  private behaviour: FakeVllmBehaviour = {};
  private failuresSent = 0;
  private held: (() => void)[] = [];
  private heldWaiters: { count: number; resolve: () => void }[] = [];

  /** Loaded adapters, sleep state and the admin calls (with `servedModel`; otherwise null). */
  readonly admin: FakeVllmAdmin | null;

  private constructor(
    private readonly server: Server,
    private readonly options: FakeVllmOptions,
  ) {
    this.admin = options.servedModel === undefined ? null : new FakeVllmAdmin(options.servedModel, options.serverFlags);
  }

  /**
   * Starts a fake on 127.0.0.1, port 0.
   * @param behaviour - how it answers the first calls
   * @param options - served model name (turns the model registry on) and vocabulary size
   * @returns the running fake; its base URL is {@link FakeVllm.url}
   */
  static async start(behaviour: FakeVllmBehaviour = {}, options: FakeVllmOptions = {}): Promise<FakeVllm> {
    let fake: FakeVllm | undefined;
    const server = createServer((req, res) => void fake!.handle(req, res));
    server.keepAliveTimeout = 60_000;
    fake = new FakeVllm(server, options);
    fake.behave(behaviour);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
    await once(server, "listening");
    return fake;
  }

  /** Base URL to register as a model endpoint, e.g. `http://127.0.0.1:PORT/v1`. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Replaces the behaviour for the next calls (and resets the failure counter). */
  behave(behaviour: FakeVllmBehaviour): void {
    this.behaviour = behaviour;
    this.failuresSent = 0;
  }

  /** Number of calls currently held by `holdAfterEvents`. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Resolves once at least `count` calls are being held. */
  waitForHeld(count: number): Promise<void> {
    if (this.held.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.heldWaiters.push({ count, resolve }));
  }

  /** Lets every held call go on. */
  release(): void {
    const held = this.held;
    this.held = [];
    for (const go of held) go();
  }

  /** Stops the server, cutting open connections (hanging calls included). */
  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private hold(): Promise<void> {
    const released = new Promise<void>((resolve) => this.held.push(resolve));
    const ready = this.heldWaiters.filter((w) => this.held.length >= w.count);
    this.heldWaiters = this.heldWaiters.filter((w) => this.held.length < w.count);
    for (const w of ready) w.resolve();
    return released;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const [path = "", query = ""] = (req.url ?? "").split("?", 2);
    // vLLM's liveness route (`serve/instrumentator/health.py`): 200 with an empty body once the engine is up.
    if (path === "/health" && req.method === "GET")
      return sendAnswer(res, { status: 200, text: "", contentType: null });
    if (this.admin?.handles(path)) {
      const answer = this.admin.handle(path, new URLSearchParams(query), parseOrEmpty(chunks));
      this.options.onRecord?.({ kind: "admin", ...this.admin.calls.at(-1), weightsPath: this.admin.weightsPath });
      return sendAnswer(res, answer);
    }
    const kind = path === "/v1/chat/completions" ? "chat" : path === "/v1/completions" ? "completions" : null;
    if (req.method !== "POST" || kind === null) return sendJson(res, 404, { detail: "Not Found" });
    let body: Record<string, unknown>;
    const text = Buffer.concat(chunks).toString("utf8");
    try {
      body = JSON.parse(text);
    } catch {
      return sendJson(res, 400, errorBody("Invalid JSON body", "BadRequestError", 400));
    }
    const adapterPath = this.admin?.adapters.get(String(body.model)) ?? null;
    const sleeping = this.admin?.sleeping ?? false;
    const weightsPath = this.admin?.weightsPath ?? null;
    this.received.push({ path, headers: req.headers, body, text, sleeping, adapterPath, weightsPath });
    this.options.onRecord?.({ kind: "call", path, model: body.model, sleeping, adapterPath, weightsPath });
    const unknownModel = this.admin?.modelError(body.model) ?? null;
    if (unknownModel !== null) return sendAnswer(res, unknownModel);
    const b = this.behaviour.decide ? { ...this.behaviour, ...this.behaviour.decide(body) } : this.behaviour;
    if (b.hang) return;
    if (b.failTimes !== undefined && this.failuresSent < b.failTimes) {
      this.failuresSent++;
      const status = b.failStatus ?? 503;
      return sendJson(res, status, errorBody(`fake failure ${this.failuresSent}`, "ServiceUnavailableError", status));
    }
    if (b.contextOverflow) {
      const message =
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4900 in the messages, 100 in the completion). Please reduce the length of the messages or completion.";
      return sendJson(res, 400, errorBody(message, "BadRequestError", 400));
    }
    if (b.holdAfterEvents === 0) await this.hold();
    const plan = foldIds(buildPlan(kind, body, b), this.options.vocabSize);
    if (body.stream === true) await this.stream(res, kind, body, plan, b);
    else sendJson(res, 200, kind === "chat" ? chatBody(body, plan) : completionBody(body, plan));
  }

  private async stream(
    res: ServerResponse,
    kind: "chat" | "completions",
    body: Record<string, unknown>,
    plan: Plan,
    b: FakeVllmBehaviour,
  ): Promise<void> {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    const events = kind === "chat" ? chatChunks(body, plan) : completionChunks(body, plan);
    let sent = 0;
    for (const event of events) {
      if (b.dieAfterEvents !== undefined && sent >= b.dieAfterEvents) {
        res.socket?.destroy();
        return;
      }
      if (b.errorAfterEvents !== undefined && sent >= b.errorAfterEvents) {
        const error = errorBody("fake engine failure", "InternalServerError", 500);
        res.end(`data: ${JSON.stringify(error)}\n\ndata: [DONE]\n\n`);
        return;
      }
      if (b.holdAfterEvents !== undefined && b.holdAfterEvents > 0 && sent === b.holdAfterEvents) await this.hold();
      const line = `data: ${JSON.stringify(event)}\n\n`;
      // Before dying, wait until each event has left the process: a destroy drops buffered writes.
      if (b.dieAfterEvents !== undefined) await new Promise((resolve) => res.write(line, resolve));
      else if (!res.write(line)) await once(res, "drain");
      sent++;
    }
    res.end("data: [DONE]\n\n");
  }
}

/** Folds a plan's ids below `vocabSize` (unchanged without one). */
function foldIds(plan: Plan, vocabSize: number | undefined): Plan {
  if (vocabSize === undefined) return plan;
  const fold = (id: number) => id % vocabSize;
  const steps = plan.steps.map((s) => ({ ...s, tokens: s.tokens.map((t) => ({ ...t, id: fold(t.id) })) }));
  return { ...plan, promptIds: plan.promptIds.map(fold), steps };
}

/** The JSON body of an admin call, or {} for none or a malformed one (vLLM's routes validate it themselves). */
function parseOrEmpty(chunks: Buffer[]): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function sendAnswer(res: ServerResponse, answer: AdminAnswer): void {
  const headers: Record<string, string | number> = { "content-length": Buffer.byteLength(answer.text) };
  if (answer.contentType !== null) headers["content-type"] = answer.contentType;
  res.writeHead(answer.status, headers);
  res.end(answer.text);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
