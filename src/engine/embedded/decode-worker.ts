/** @module Entry of one decode worker thread: a GPT copy and batching loop on its own tfjs-wasm instance. */
import { parentPort, workerData } from "node:worker_threads";
import type { TokenEvent } from "../engine.js";
import { initWasmBackend } from "./backend.js";
import { Batcher } from "./batcher.js";
import type { DecodeReply, DecodeRequest, DecodeWorkerData } from "./decode-thread.js";
import { Gpt } from "./model.js";
import { ByteTokenizer } from "./tokenizer.js";

const port = parentPort;
if (port === null) throw new Error("decode-worker.ts runs only as a worker thread (see decode-thread.ts)");

await initWasmBackend();
const data = workerData as DecodeWorkerData;
const model = new Gpt(data.config, new Map(data.weights));
let version = data.version;
const batcher = new Batcher(model, {
  tokenizer: new ByteTokenizer(),
  maxBatchSize: data.maxBatchSize,
  policyVersion: () => version,
});
/** Abort controllers of the calls in flight, by call id. */
const calls = new Map<number, AbortController[]>();
/** Tokens sampled since the last flush: call id, request index, token id, logprob, repeated. */
let tokens: number[] = [];

/** Posts the buffered tokens (scheduled once per decode step, when the first token of the step arrives). */
function flush(): void {
  const batch = tokens;
  tokens = [];
  port?.postMessage({ kind: "tokens", tokens: batch } satisfies DecodeReply);
}

function generate(request: Extract<DecodeRequest, { kind: "generate" }>): void {
  const { id, requests, stream, aborted } = request;
  // One controller per sequence, so the main thread can end one sequence (its stream callback threw) or all.
  const controllers = requests.map(() => new AbortController());
  if (aborted) for (const controller of controllers) controller.abort();
  calls.set(id, controllers);
  const runs = requests.map((one, index) =>
    batcher.submit([one], {
      signal: controllers[index]!.signal,
      ...(stream
        ? {
            onToken: (_only: number, token: TokenEvent) => {
              if (tokens.length === 0) queueMicrotask(flush);
              tokens.push(id, index, token.tokenId, token.logprob);
            },
          }
        : {}),
    }),
  );
  Promise.all(runs).then(
    (results) => {
      calls.delete(id);
      port?.postMessage({ kind: "done", id, results: results.map(([r]) => r!) } satisfies DecodeReply);
    },
    (err: unknown) => {
      calls.delete(id);
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      port?.postMessage({ kind: "failed", id, message } satisfies DecodeReply);
    },
  );
}

port.on("message", (request: DecodeRequest) => {
  switch (request.kind) {
    case "weights":
      model.assignWeights(request.weights);
      version = request.version;
      return;
    case "generate":
      generate(request);
      return;
    case "abort": {
      const controllers = calls.get(request.id) ?? [];
      for (const [index, controller] of controllers.entries())
        if (request.index === undefined || request.index === index) controller.abort();
      return;
    }
  }
});
port.postMessage({ kind: "ready" } satisfies DecodeReply);
