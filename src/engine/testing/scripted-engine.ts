/**
 * @module A test double of `Engine` for the engine server's unit tests: it "generates" a scripted id sequence (or
 * seeded printable bytes), honouring max tokens, stop ids, stop strings, `onToken` and abort, one token per event-loop
 * turn so concurrent calls interleave. Not part of the build; server behaviour against the real model is tested with
 * `EmbeddedEngine`.
 */
import { existsSync } from "node:fs";
import type { ChatTemplate } from "../chat-template.js";
import { ChatMLTemplate } from "../embedded/chat-template.js";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import type { Engine, GenerateOptions, GenerationRequest, GenerationResult } from "../engine.js";
import type { Tokenizer } from "../tokenizer.js";

/** Ids to emit for a prompt; the generation still ends early on a stop id, stop string or max tokens. */
export type Script = (promptTokenIds: readonly number[]) => number[];

/** Seeded printable bytes (32–126): a small linear congruential generator, same seed → same ids. */
function seededBytes(seed: number, count: number): number[] {
  let state = (seed >>> 0) + 1;
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    ids.push(32 + (state % 95));
  }
  return ids;
}

/** Scripted stand-in for an engine (see the module doc). */
export class ScriptedEngine implements Engine {
  /** +1 per `loadCheckpoint`. */
  policyVersion = 0;
  /** Default: the embedded engine's byte tokenizer (scripted ids are bytes and its special ids). */
  readonly tokenizer: Tokenizer;
  /** Default: the embedded engine's ChatML template. */
  readonly chatTemplate: ChatTemplate;
  /** Calls of `generate` seen, with their request counts (to check batching of n > 1). */
  readonly calls: number[] = [];

  /**
   * @param contextLength - context (tokens); a prompt this long or longer is refused
   * @param script - ids to "generate" per prompt; omitted: seeded printable bytes
   * @param format - another tokenizer and chat template to serve with; omitted: the embedded engine's
   */
  constructor(
    readonly contextLength = 256,
    private readonly script?: Script,
    format?: { tokenizer: Tokenizer; chatTemplate: ChatTemplate },
  ) {
    const tokenizer = new ByteTokenizer();
    this.tokenizer = format?.tokenizer ?? tokenizer;
    this.chatTemplate = format?.chatTemplate ?? new ChatMLTemplate(tokenizer);
  }

  async generate(requests: GenerationRequest[], options: GenerateOptions = {}): Promise<GenerationResult[]> {
    this.calls.push(requests.length);
    return Promise.all(requests.map((request, index) => this.one(request, index, options)));
  }

  private async one(request: GenerationRequest, index: number, options: GenerateOptions): Promise<GenerationResult> {
    const { promptTokenIds, sampling } = request;
    if (promptTokenIds.length >= this.contextLength) throw new RangeError("prompt does not fit the context");
    const planned = this.script?.(promptTokenIds) ?? seededBytes(sampling.seed ?? Date.now(), sampling.maxTokens);
    const version = this.policyVersion;
    const tokenIds: number[] = [];
    const logprobs: number[] = [];
    let text = "";
    for (const id of planned.slice(0, sampling.maxTokens)) {
      await new Promise((resolve) => setImmediate(resolve));
      if (options.signal?.aborted) return this.result(request, tokenIds, logprobs, "abort", null, version);
      const logprob = -0.5 - (id % 7) / 10;
      tokenIds.push(id);
      logprobs.push(logprob);
      options.onToken?.(index, { tokenId: id, logprob });
      if (sampling.stopTokenIds.includes(id)) return this.result(request, tokenIds, logprobs, "stop", id, version);
      if (id < 256) text += String.fromCharCode(id);
      const stop = sampling.stop.find((s) => text.includes(s));
      if (stop !== undefined) return this.result(request, tokenIds, logprobs, "stop", stop, version);
    }
    return this.result(request, tokenIds, logprobs, "length", null, version);
  }

  private result(
    request: GenerationRequest,
    tokenIds: number[],
    logprobs: number[],
    finishReason: GenerationResult["finishReason"],
    stopReason: number | string | null,
    policyVersion: number,
  ): GenerationResult {
    return { promptTokenIds: request.promptTokenIds, tokenIds, logprobs, finishReason, stopReason, policyVersion };
  }

  async logprobs(tokenIds_B_T: number[][]): Promise<number[][]> {
    return tokenIds_B_T.map((row) => row.map(() => 0));
  }

  async trainStep(): Promise<never> {
    throw new Error("ScriptedEngine does not train");
  }

  async saveCheckpoint(): Promise<void> {}

  async loadCheckpoint(dir: string): Promise<void> {
    if (!existsSync(dir)) throw new Error(`no checkpoint at ${dir}`);
    this.policyVersion++;
  }

  /** Nothing to reset: the scripted engine has no optimiser. */
  resetOptimizer(): void {}

  dispose(): void {}
}
