/** @module One sequence being generated: sampler state, tokens so far, and the rules that end it. */
import type { FinishReason, GenerationRequest, GenerationResult, SamplingParams, TokenEvent } from "../engine.js";
import { Rng, randomSeed } from "./rng.js";
import type { SampledToken } from "./sample.js";
import type { ByteTokenizer } from "./tokenizer.js";

/** What a sequence needs from its surroundings. */
export interface SequenceContext {
  tokenizer: ByteTokenizer;
  /** Maximum prompt + response length (tokens). */
  contextLength: number;
  /** Policy version of the weights when the sequence was admitted. */
  policyVersion: number;
  /** Receives every accepted token, in order. */
  onToken?: (token: TokenEvent) => void;
  /** Called once when the sequence ends, for whatever reason. */
  onFinish: () => void;
}

/** A sequence in the decode loop. */
export class Sequence {
  /** The prompt, [promptLen]. */
  readonly promptTokenIds: number[];
  /** Its sampling settings. */
  readonly sampling: SamplingParams;
  /** Its own random stream (seeded from `sampling.seed` when given). */
  readonly rng: Rng;
  /** Generated ids so far, [respLen]. */
  readonly tokenIds: number[] = [];
  /** Logprob (nats) of each generated id under the distribution sampled from, [respLen]. */
  readonly logprobs: number[] = [];
  /** Why it ended; `null` while decoding. */
  finishReason: FinishReason | null = null;
  /** The stop id or stop string that ended it; `null` otherwise. */
  stopReason: number | string | null = null;
  private readonly context: SequenceContext;

  constructor(request: GenerationRequest, context: SequenceContext) {
    this.promptTokenIds = [...request.promptTokenIds];
    this.sampling = request.sampling;
    this.rng = new Rng(request.sampling.seed ?? randomSeed());
    this.context = context;
  }

  /** Ends at once a sequence that may generate nothing (maxTokens <= 0); call after its group is assembled. */
  start(): void {
    if (this.sampling.maxTokens <= 0) this.finish("length", null);
  }

  /** True once the sequence has ended. */
  get done(): boolean {
    return this.finishReason !== null;
  }

  /** Prompt + generated tokens. */
  get length(): number {
    return this.promptTokenIds.length + this.tokenIds.length;
  }

  /** The newest token (the input of the next decode step). */
  get lastTokenId(): number {
    return this.tokenIds.at(-1) ?? this.promptTokenIds.at(-1)!;
  }

  /** Appends a token and applies the stop rules; a throwing `onToken` aborts only this sequence. */
  accept(token: SampledToken): void {
    if (this.done) return;
    this.tokenIds.push(token.tokenId);
    this.logprobs.push(token.logprob);
    try {
      this.context.onToken?.({ tokenId: token.tokenId, logprob: token.logprob });
    } catch {
      this.finish("abort", null);
      return;
    }
    this.checkStop(token.tokenId);
  }

  /** Ends the sequence as cancelled (no-op once done). */
  abort(): void {
    this.finish("abort", null);
  }

  /** @returns the finished sequence as the engine's result */
  result(): GenerationResult {
    return {
      promptTokenIds: this.promptTokenIds,
      tokenIds: this.tokenIds,
      logprobs: this.logprobs,
      finishReason: this.finishReason ?? "abort",
      stopReason: this.stopReason,
      policyVersion: this.context.policyVersion,
    };
  }

  /** Rules in order: stop token id, end-of-text, stop string, max tokens, context. */
  private checkStop(tokenId: number): void {
    if (this.sampling.stopTokenIds.includes(tokenId)) {
      this.finish("stop", tokenId);
      return;
    }
    // Like vLLM without ignore_eos: <|endoftext|> always ends a sequence, with stop_reason null.
    if (tokenId === this.context.tokenizer.eosId) {
      this.finish("stop", null);
      return;
    }
    const hit = this.stopStringHit();
    if (hit !== undefined) {
      this.finish("stop", hit);
      return;
    }
    if (this.tokenIds.length >= this.sampling.maxTokens || this.length >= this.context.contextLength)
      this.finish("length", null);
  }

  /** The first stop string the generated text contains, if any. */
  private stopStringHit(): string | undefined {
    if (this.sampling.stop.length === 0) return undefined;
    const text = this.context.tokenizer.decode(this.tokenIds);
    return this.sampling.stop.find((s) => s.length > 0 && text.includes(s));
  }

  private finish(reason: FinishReason, stopReason: number | string | null): void {
    if (this.done) return;
    this.finishReason = reason;
    this.stopReason = stopReason;
    this.context.onFinish();
  }
}
