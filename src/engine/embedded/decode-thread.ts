/**
 * @module Decode worker threads (tfjs-wasm is single-threaded): each runs its own batching loop on a copy of the
 * weights, posted in order with the calls; each `generate` goes to the loop with the fewest sequences. An abort or a
 * throwing `onToken` ends a streamed sequence at the token the caller last saw, as in process.
 */
import { Worker } from "node:worker_threads";
import type { GenerateOptions, GenerationRequest, GenerationResult } from "../engine.js";
import { onAbort } from "./abort-watch.js";
import type { ModelConfig } from "./config.js";
import { workerEntry } from "./worker-entry.js";

/** What a decode worker starts with. */
export interface DecodeWorkerData {
  config: ModelConfig;
  /** The weights by name. */
  weights: [string, Float32Array][];
  /** Their policy version. */
  version: number;
  /** Most sequences its loop decodes together. */
  maxBatchSize: number;
}

/** Main thread → worker. */
export type DecodeRequest =
  | { kind: "weights"; version: number; weights: [string, Float32Array][] }
  /** `aborted`: the caller's signal had aborted already (every sequence ends before its first token). */
  | { kind: "generate"; id: number; requests: GenerationRequest[]; stream: boolean; aborted: boolean }
  /** Ends one sequence of a call (`index`) or all of them. */
  | { kind: "abort"; id: number; index?: number };

/** Worker → main thread. */
export type DecodeReply =
  | { kind: "ready" }
  /** Sampled tokens as flat quadruples: call id, request index, token id, logprob (nats). */
  | { kind: "tokens"; tokens: number[] }
  | { kind: "done"; id: number; results: GenerationResult[] }
  | { kind: "failed"; id: number; message: string };

/** A decode worker thread failed or exited; the calls it held fail with this error. */
export class DecodeWorkerFailed extends Error {
  constructor(detail: string) {
    super(`embedded engine decode worker failed: ${detail}`);
    this.name = "DecodeWorkerFailed";
  }
}

/** One `generate` call on a worker. */
interface Call {
  resolve(results: GenerationResult[]): void;
  reject(err: Error): void;
  onToken: GenerateOptions["onToken"];
  /** Tokens handed to `onToken` per request. */
  delivered: number[];
  /** Per request: where the caller ended it (tokens kept) and why; undefined while it runs. */
  cut: ({ at: number; by: "signal" | "callback" } | undefined)[];
  sequences: number;
  /** Stops watching the call's abort signal (when it has one). */
  detach(): void;
}

/** The main thread's handle on one decode worker thread. */
export class DecodeThread {
  private readonly worker: Worker;
  private ready = false;
  private failure: Error | undefined;
  private readonly calls = new Map<number, Call>();
  private nextId = 1;
  private outstanding = 0;

  /** Starts the thread; it takes calls once it has loaded its model ({@link DecodeThread.usable}). */
  constructor(data: DecodeWorkerData) {
    this.worker = new Worker(workerEntry("decode-worker"), { workerData: data });
    // Referenced only while calls are out, so an idle worker never keeps the process alive.
    this.worker.unref();
    this.worker.on("message", (reply: DecodeReply) => this.onReply(reply));
    this.worker.on("error", (err) => this.fail(new DecodeWorkerFailed(err.stack ?? err.message)));
    this.worker.on("exit", (code) => this.fail(new DecodeWorkerFailed(`thread exited with code ${code}`)));
  }

  /** True once the thread has loaded its model, until it fails or is terminated. */
  get usable(): boolean {
    return this.ready && this.failure === undefined;
  }

  /** True once the thread has failed, exited or been terminated (it takes no more calls). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Sequences handed to the thread and not yet answered. */
  get load(): number {
    return this.outstanding;
  }

  /**
   * Runs one `generate` call on the thread, with the in-process loop's contract.
   * @throws {DecodeWorkerFailed} when the thread fails or exits first; `Error` when its decode loop failed
   */
  submit(requests: GenerationRequest[], options: GenerateOptions = {}): Promise<GenerationResult[]> {
    if (this.failure) return Promise.reject(this.failure);
    if (requests.length === 0) return Promise.resolve([]);
    const id = this.nextId++;
    return new Promise<GenerationResult[]>((resolve, reject) => {
      const call: Call = {
        resolve,
        reject,
        onToken: options.onToken,
        delivered: requests.map(() => 0),
        cut: requests.map(() => undefined),
        sequences: requests.length,
        detach: () => {},
      };
      this.calls.set(id, call);
      if (this.outstanding === 0) this.worker.ref();
      this.outstanding += requests.length;
      // Aborted already: the worker ends every sequence before its first token, as the in-process loop does.
      const aborted = options.signal?.aborted === true;
      this.worker.postMessage({
        kind: "generate",
        id,
        requests,
        stream: options.onToken !== undefined,
        aborted,
      } satisfies DecodeRequest);
      if (options.signal && !aborted)
        call.detach = onAbort(options.signal, () => {
          // A streamed sequence ends at the last token the caller saw, as in-process (where the abort lands between
          // two tokens it was handed). Without a stream the caller saw none, so the worker's own stopping point
          // stands, as in-process the loop's.
          if (call.onToken)
            call.delivered.forEach((at, index) => {
              call.cut[index] ??= { at, by: "signal" };
            });
          if (this.calls.has(id)) this.worker.postMessage({ kind: "abort", id } satisfies DecodeRequest);
        });
    });
  }

  /** Posts new weights (transferred: unusable here afterwards) for later calls and running sequences. */
  setWeights(version: number, weights: [string, Float32Array][]): void {
    if (this.failure) return;
    this.worker.postMessage({ kind: "weights", version, weights } satisfies DecodeRequest, [
      ...weights.map(([, values]) => values.buffer as ArrayBuffer),
    ]);
  }

  /** Stops the thread; calls in flight fail with `reason`. */
  terminate(reason: Error = new DecodeWorkerFailed("terminated")): void {
    this.fail(reason);
    void this.worker.terminate();
  }

  private onReply(reply: DecodeReply): void {
    switch (reply.kind) {
      case "ready":
        this.ready = true;
        return;
      case "tokens":
        for (let i = 0; i < reply.tokens.length; i += 4) {
          const call = this.calls.get(reply.tokens[i]!);
          const index = reply.tokens[i + 1]!;
          if (call === undefined || call.cut[index] !== undefined) continue;
          call.delivered[index]! += 1;
          try {
            call.onToken?.(index, { tokenId: reply.tokens[i + 2]!, logprob: reply.tokens[i + 3]! });
          } catch {
            // As in-process: a throwing callback ends its sequence with that token kept.
            call.cut[index] = { at: call.delivered[index]!, by: "callback" };
            this.worker.postMessage({ kind: "abort", id: reply.tokens[i]!, index } satisfies DecodeRequest);
          }
        }
        return;
      case "done": {
        const call = this.settle(reply.id);
        call?.resolve(reply.results.map((result, index) => cutResult(result, call.cut[index])));
        return;
      }
      case "failed":
        this.settle(reply.id)?.reject(new Error(reply.message));
        return;
    }
  }

  /** Forgets a call once answered. */
  private settle(id: number): Call | undefined {
    const call = this.calls.get(id);
    if (call === undefined) return undefined;
    this.calls.delete(id);
    call.detach();
    this.outstanding -= call.sequences;
    if (this.outstanding === 0) this.worker.unref();
    return call;
  }

  private fail(failure: Error): void {
    this.failure ??= failure;
    for (const id of [...this.calls.keys()]) this.settle(id)?.reject(this.failure);
    this.worker.unref();
  }
}

/** A worker's result cut at the token the caller saw, as `abort`, unless it had already ended there by itself. */
function cutResult(
  result: GenerationResult,
  cut: { at: number; by: "signal" | "callback" } | undefined,
): GenerationResult {
  if (cut === undefined || (cut.by === "signal" && result.tokenIds.length <= cut.at)) return result;
  return {
    ...result,
    tokenIds: result.tokenIds.slice(0, cut.at),
    logprobs: result.logprobs.slice(0, cut.at),
    finishReason: "abort",
    stopReason: null,
  };
}
