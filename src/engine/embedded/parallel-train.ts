/**
 * @module Data-parallel training steps: rows split into shares of about equal tokens, one per gradient worker thread,
 * gradients summed and applied once. Losses are divided by the whole step's denominator, so the result equals a
 * one-thread step up to float summation order.
 */
import { Worker } from "node:worker_threads";
import * as tf from "@tensorflow/tfjs";
import type { LossConfig, OptimizerConfig, TrainMetrics, TrainRow } from "../engine.js";
import type { AdamW } from "./adamw.js";
import { MAX_TRAIN_THREADS, type ModelConfig } from "./config.js";
import type { Gpt } from "./model.js";
import { addSums, applyGradients, gradientSums, type MicroSums, stepDenominator } from "./train.js";
import { workerEntry } from "./worker-entry.js";

/** What a gradient worker starts with. */
export interface GradientWorkerData {
  config: ModelConfig;
  /** Initial weights by name (every request sends the current ones again). */
  weights: [string, Float32Array][];
}

/** One share of a step, sent to a worker. */
export interface GradientRequest {
  /** The weights to compute with, by name (the main thread's at the start of the step). */
  weights: [string, Float32Array][];
  rows: TrainRow[];
  loss: LossConfig;
  /** The whole step's loss denominator. */
  denominator: number;
  microBatchSize: number;
}

/** A worker's answer: its share's gradient sums by weight name, or why it failed. */
export type GradientReply =
  | { ok: true; grads: [string, Float32Array][]; sums: MicroSums }
  | { ok: false; message: string };

/** A gradient worker thread failed or exited; the step that needed it changed nothing. */
export class GradientWorkerFailed extends Error {
  constructor(detail: string) {
    super(`embedded engine gradient worker failed: ${detail}`);
    this.name = "GradientWorkerFailed";
  }
}

/** One worker thread and the request it is answering. */
class GradientWorker {
  private readonly worker: Worker;
  private readonly ready: Promise<void>;
  private pending: { resolve(reply: GradientReply): void; reject(err: Error): void } | undefined;
  private failure: GradientWorkerFailed | undefined;

  constructor(data: GradientWorkerData) {
    this.worker = new Worker(workerEntry("grad-worker"), { workerData: data });
    // Referenced only while a share is out (see run), so an idle worker never keeps the process alive.
    this.worker.unref();
    let markReady: () => void = () => {};
    this.ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    this.worker.on("message", (message: GradientReply | { ready: true }) => {
      if ("ready" in message) return markReady();
      const pending = this.pending;
      this.pending = undefined;
      this.worker.unref();
      pending?.resolve(message);
    });
    const fail = (failure: GradientWorkerFailed) => {
      this.failure ??= failure;
      const pending = this.pending;
      this.pending = undefined;
      markReady();
      this.worker.unref();
      pending?.reject(this.failure);
    };
    this.worker.on("error", (err) => fail(new GradientWorkerFailed(err.stack ?? err.message)));
    this.worker.on("exit", (code) => fail(new GradientWorkerFailed(`thread exited with code ${code}`)));
  }

  /** False once the thread failed or exited (a new one is then started). */
  get usable(): boolean {
    return this.failure === undefined;
  }

  /** Resolves once the thread has loaded its model. @throws {GradientWorkerFailed} */
  async started(): Promise<void> {
    // Referenced while it loads, so a process with nothing else to do waits for it; unreferenced again either way, so
    // a step that fails here (another worker's start failed) leaves no thread holding the process open.
    this.worker.ref();
    try {
      await this.ready;
    } finally {
      this.worker.unref();
    }
    if (this.failure) throw this.failure;
  }

  /** Sends one share synchronously (the worker computes meanwhile). @throws {GradientWorkerFailed} */
  run(request: GradientRequest): Promise<GradientReply> {
    if (this.failure) return Promise.reject(this.failure);
    // Referenced while a share is out, so a process with nothing else to do waits for the answer.
    this.worker.ref();
    return new Promise<GradientReply>((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(request);
    });
  }

  terminate(): void {
    this.failure ??= new GradientWorkerFailed("terminated");
    void this.worker.terminate();
  }
}

/** Longest row first, each to the share with the fewest tokens: similar lengths group, shortening padding. */
export function splitRows(rows: TrainRow[], shares: number): TrainRow[][] {
  const count = Math.max(1, Math.min(shares, rows.length));
  const out: { rows: TrainRow[]; tokens: number }[] = Array.from({ length: count }, () => ({ rows: [], tokens: 0 }));
  const byLength = [...rows].sort((a, b) => b.tokenIds.length - a.tokenIds.length);
  for (const row of byLength) {
    let lightest = out[0]!;
    for (const share of out) if (share.tokens < lightest.tokens) lightest = share;
    lightest.rows.push(row);
    lightest.tokens += row.tokenIds.length;
  }
  return out.map((share) => share.rows);
}

/** What one step trains: the model and its optimiser, the rows, the loss, the optimiser settings. */
type StepArgs = [model: Gpt, optimizer: AdamW, rows: TrainRow[], loss: LossConfig, settings: OptimizerConfig];

/** Training steps on `threads` threads; workers start on the first step and each holds a copy of the weights. */
export class ParallelTrainer {
  private workers: GradientWorker[] = [];
  /** The step in progress: steps run one at a time, in call order. */
  private running: Promise<unknown> = Promise.resolve();

  /** @throws {RangeError} unless `threads` is an integer from 2 to {@link MAX_TRAIN_THREADS} */
  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 2 || threads > MAX_TRAIN_THREADS)
      throw new RangeError(`threads must be an integer >= 2 and <= ${MAX_TRAIN_THREADS}, got ${threads}`);
  }

  /**
   * One step split across the threads (`train.ts` `trainStep`'s contract), one at a time in call order. A failed
   * worker changes nothing and throws; the next step starts a new one.
   * @throws {RangeError} | {GradientWorkerFailed}
   */
  trainStep(...step: StepArgs): Promise<TrainMetrics> {
    const result = this.running.then(() => this.runStep(...step));
    this.running = result.catch(() => {});
    return result;
  }

  private async runStep(...[model, optimizer, rows, loss, settings]: StepArgs): Promise<TrainMetrics> {
    const denominator = stepDenominator(model, rows, loss);
    const [local = [], ...remote] = splitRows(rows, this.threads);
    const weights = remote.length > 0 ? model.readWeights() : [];
    const workers = this.workersFor(model, remote.length, weights);
    const microBatchSize = settings.microBatchSize;
    await Promise.all(workers.slice(0, remote.length).map((worker) => worker.started()));
    // Sent before the local share starts: the workers compute while this thread does.
    const replies = remote.map((share, i) =>
      workers[i]!.run({ weights, rows: share, loss, denominator, microBatchSize }),
    );
    // A rejection is handled below, after the local share; this keeps it from counting as unhandled meanwhile.
    for (const reply of replies) reply.catch(() => {});
    const step = gradientSums(model, local, loss, denominator, microBatchSize);
    try {
      for (const reply of await Promise.all(replies)) {
        if (!reply.ok) throw new GradientWorkerFailed(reply.message);
        addSums(step.sums, reply.sums);
        for (const [name, values] of reply.grads) {
          const previous = step.grads.get(name);
          const incoming = tf.tensor(values, model.byName.get(name)!.shape, "float32");
          if (previous === undefined) step.grads.set(name, incoming);
          else {
            step.grads.set(name, tf.add(previous, incoming));
            tf.dispose([previous, incoming]);
          }
        }
      }
    } catch (err) {
      for (const g of step.grads.values()) g.dispose();
      throw err;
    }
    return applyGradients(model, optimizer, step, settings);
  }

  /** Stops the worker threads. */
  dispose(): void {
    for (const worker of this.workers) worker.terminate();
    this.workers = [];
  }

  /** `count` usable workers, replacing failed ones and starting missing ones with the current weights. */
  private workersFor(model: Gpt, count: number, weights: [string, Float32Array][]): GradientWorker[] {
    this.workers = this.workers.filter((worker) => worker.usable);
    while (this.workers.length < count) this.workers.push(new GradientWorker({ config: model.config, weights }));
    return this.workers;
  }
}
