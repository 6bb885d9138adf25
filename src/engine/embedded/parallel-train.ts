/**
 * @module Data-parallel training steps for the embedded engine: tfjs-wasm runs one thread, so a step on a machine with
 * more cores splits its rows into shares of about equal token count, sends each extra share with the current weights
 * to a gradient worker thread (`grad-worker.ts`, its own tfjs-wasm instance), computes the first share itself, adds
 * the gradient sums and applies one update. Every row's loss is divided by the whole step's denominator, so the sum
 * of the shares' gradients is the step's gradient: the result equals a one-thread step up to float summation order.
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

  /**
   * Resolves once the thread has loaded its model (at once after the first time).
   * @throws {GradientWorkerFailed} when it failed or exited
   */
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

  /**
   * Sends one share now (call after {@link GradientWorker.started}) and resolves with the worker's reply. The message
   * leaves synchronously, so the worker computes while the caller's thread goes on.
   * @throws {GradientWorkerFailed} when the thread fails or exits before answering
   */
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

/**
 * Splits a step's rows into at most `shares` non-empty shares of about equal cost: longest row first, each to the
 * share with the fewest tokens so far. Rows of similar length end up together, which also shortens the padding of
 * each share's micro-batches.
 * @param rows - the step's rows
 * @param shares - how many shares at most (at least 1)
 * @returns the shares (the first holds the longest row); fewer than `shares` when there are fewer rows
 */
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

/**
 * The embedded engine's training steps on `threads` threads: this one and `threads − 1` gradient workers, started on
 * the first step and kept until {@link ParallelTrainer.dispose}. Each worker is a second tfjs-wasm instance holding a
 * copy of the weights (about the model's size in memory, plus its own activations).
 */
export class ParallelTrainer {
  private workers: GradientWorker[] = [];
  /** The step in progress: steps run one at a time, in call order. */
  private running: Promise<unknown> = Promise.resolve();

  /**
   * @param threads - threads per step, 2 to {@link MAX_TRAIN_THREADS} (one runs here)
   * @throws {RangeError} for a non-integer or a count outside that range
   */
  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 2 || threads > MAX_TRAIN_THREADS)
      throw new RangeError(`threads must be an integer >= 2 and <= ${MAX_TRAIN_THREADS}, got ${threads}`);
  }

  /**
   * One training step over `rows`, split across the threads; the same contract as `train.ts` `trainStep`. Calls made
   * while a step runs wait for it (one step at a time, in call order). While this thread waits for the workers, other
   * work of the process may run (e.g. a decode step): it sees the weights before the update, which is applied at once
   * when every share is in. When a worker fails, the step changes nothing and throws; the next step starts a new one.
   * @throws {RangeError} for malformed rows or a step without any masked token
   * @throws {GradientWorkerFailed} when a worker thread fails or exits during the step
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
