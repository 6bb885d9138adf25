/**
 * @module Continuous batching: one decode loop for every concurrent `generate` call; sequences join (prefilled
 * together) and leave at step boundaries, and each step advances every row by one token over the shared KV cache.
 */
import * as tf from "@tensorflow/tfjs";
import type { GenerateOptions, GenerationRequest, GenerationResult } from "../engine.js";
import { onAbort } from "./abort-watch.js";
import { BatchKvCache } from "./kv-cache.js";
import type { Gpt } from "./model.js";
import { sampleToken } from "./sample.js";
import { Sequence } from "./sequence.js";
import type { ByteTokenizer } from "./tokenizer.js";

/** Settings of the decode loop. */
export interface BatcherOptions {
  tokenizer: ByteTokenizer;
  /** Most rows decoded together; later sequences wait for a free row. */
  maxBatchSize: number;
  /** Current policy version (read when a sequence is admitted). */
  policyVersion: () => number;
}

/** Sequences of one `generate` call. */
interface Group {
  sequences: Sequence[];
  remaining: number;
  resolve: (results: GenerationResult[]) => void;
  reject: (error: unknown) => void;
  /** Stops watching the call's abort signal (when it has one). */
  detach: () => void;
}

/** The continuous-batching decode loop of one model. */
export class Batcher {
  private readonly model: Gpt;
  private readonly options: BatcherOptions;
  private readonly cache = new BatchKvCache();
  private pending: { sequence: Sequence; group: Group }[] = [];
  private running: { sequence: Sequence; group: Group }[] = [];
  private loop: Promise<void> | null = null;
  /** Set by {@link Batcher.close}: every later call fails with it. */
  private closedWith: Error | undefined;

  constructor(model: Gpt, options: BatcherOptions) {
    this.model = model;
    this.options = options;
  }

  /** Sequences decoding now plus those waiting to join. */
  get load(): { running: number; pending: number } {
    return { running: this.running.length, pending: this.pending.length };
  }

  /** Queues validated requests to join at the next step boundary; resolves in request order once all ended. */
  submit(requests: GenerationRequest[], options: GenerateOptions = {}): Promise<GenerationResult[]> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const group: Group = { sequences: [], remaining: requests.length, resolve, reject, detach: () => {} };
      const version = this.options.policyVersion();
      requests.forEach((request, index) => {
        const sequence = new Sequence(request, {
          tokenizer: this.options.tokenizer,
          contextLength: this.model.config.context,
          policyVersion: version,
          onToken: options.onToken ? (token) => options.onToken?.(index, token) : undefined,
          onFinish: () => this.onFinish(group),
        });
        group.sequences.push(sequence);
      });
      for (const sequence of group.sequences) {
        sequence.start();
        if (!sequence.done) this.pending.push({ sequence, group });
      }
      if (options.signal)
        group.detach = onAbort(options.signal, () => {
          for (const s of group.sequences) s.abort();
        });
      this.ensureLoop();
    });
  }

  /** Fails every call in flight, waiting or later with `reason`. */
  close(reason: Error): void {
    this.closedWith ??= reason;
    this.failAll(reason);
  }

  private onFinish(group: Group): void {
    group.remaining -= 1;
    if (group.remaining === 0) {
      group.detach();
      group.resolve(group.sequences.map((s) => s.result()));
    }
  }

  private ensureLoop(): void {
    if (this.loop || (this.pending.length === 0 && this.running.length === 0)) return;
    this.loop = this.run().finally(() => {
      this.loop = null;
      this.ensureLoop();
    });
  }

  private async run(): Promise<void> {
    try {
      while (this.pending.length > 0 || this.running.length > 0) {
        this.admit();
        this.evict();
        if (this.running.length > 0) this.step();
        this.evict();
        // Yield so new generate() calls and abort signals land before the next step boundary.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      this.failAll(error);
    }
  }

  /** Prefills up to the free rows' worth of waiting sequences and samples their first tokens. */
  private admit(): void {
    this.pending = this.pending.filter((p) => !p.sequence.done);
    const free = this.options.maxBatchSize - this.running.length;
    if (free <= 0 || this.pending.length === 0) return;
    const joining = this.pending.splice(0, free);
    const prompts = joining.map((p) => p.sequence.promptTokenIds);
    const width = Math.max(...prompts.map((p) => p.length));
    const ids = new Int32Array(joining.length * width);
    prompts.forEach((prompt, b) => {
      ids.set(prompt, b * width);
    });
    const lastRows = prompts.map((prompt, b) => b * width + prompt.length - 1);
    // Running before the prefill, so a failing prefill fails these calls too (failAll), not only the others.
    this.running.push(...joining);
    const { logits, kv } = tf.tidy(() => {
      const out = this.model.forward(tf.tensor2d(ids, [joining.length, width], "int32"), {
        returnKv: true,
        inference: true,
      });
      return { logits: tf.gather(out.logits, tf.tensor1d(lastRows, "int32")), kv: out.kv }; // [B', V]
    });
    this.cache.addRows(
      kv,
      prompts.map((p) => p.length),
    );
    this.sampleRows(logits, joining);
  }

  /** One decode step for every running row. */
  private step(): void {
    const rows = this.running.map((r) => r.sequence);
    const tokens = Int32Array.from(rows, (s) => s.lastTokenId);
    const positions = Int32Array.from(rows, (s) => s.length - 1);
    this.cache.reserveColumn();
    const logits = this.model.decodeStep(tokens, positions, this.cache.kv, this.cache.filled, this.cache.stepBias());
    this.cache.advance();
    this.sampleValues(logits, this.running);
  }

  /** Samples one token per row from logits [rows, V] (disposed here). */
  private sampleRows(logits: tf.Tensor2D, rows: { sequence: Sequence }[]): void {
    const values = logits.dataSync() as Float32Array;
    logits.dispose();
    this.sampleValues(values, rows);
  }

  /** Samples one token per row from logits [rows × V], row-major. */
  private sampleValues(values: Float32Array, rows: { sequence: Sequence }[]): void {
    const vocab = values.length / rows.length;
    rows.forEach(({ sequence }, b) => {
      if (sequence.done) return;
      sequence.accept(sampleToken(values.subarray(b * vocab, (b + 1) * vocab), sequence.sampling, sequence.rng));
    });
  }

  /** Drops ended rows from the batch and the cache. */
  private evict(): void {
    const keep: number[] = [];
    this.running.forEach((r, b) => {
      if (!r.sequence.done) keep.push(b);
    });
    if (keep.length === this.running.length) return;
    this.cache.keepRows(keep);
    this.running = keep.map((b) => this.running[b]!);
  }

  /** A numeric failure ends every call in flight with that error. */
  private failAll(error: unknown): void {
    const groups = new Set([...this.pending, ...this.running].map((r) => r.group));
    this.pending = [];
    this.running = [];
    this.cache.clear();
    for (const group of groups) {
      group.detach();
      group.reject(error);
    }
  }
}
