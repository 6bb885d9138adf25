/** @module Entry of one gradient worker thread: gradient sums over its share of a step; never updates weights. */
import { parentPort, workerData } from "node:worker_threads";
import { initWasmBackend } from "./backend.js";
import { Gpt } from "./model.js";
import type { GradientReply, GradientRequest, GradientWorkerData } from "./parallel-train.js";
import { gradientSums } from "./train.js";

const port = parentPort;
if (port === null) throw new Error("grad-worker.ts runs only as a worker thread (see parallel-train.ts)");

await initWasmBackend();
const data = workerData as GradientWorkerData;
const model = new Gpt(data.config, new Map(data.weights));

/** One request: the gradient sums of its rows, each gradient copied out of wasm memory and transferred back. */
function answer(request: GradientRequest): GradientReply {
  model.assignWeights(request.weights);
  const { grads, sums } = gradientSums(model, request.rows, request.loss, request.denominator, request.microBatchSize);
  const out: [string, Float32Array][] = [];
  for (const [name, g] of grads) {
    out.push([name, g.dataSync() as Float32Array]);
    g.dispose();
  }
  return { ok: true, grads: out, sums };
}

port.on("message", (request: GradientRequest) => {
  let reply: GradientReply;
  try {
    reply = answer(request);
  } catch (err) {
    reply = { ok: false, message: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  port.postMessage(reply, reply.ok ? reply.grads.map(([, values]) => values.buffer as ArrayBuffer) : []);
});
port.postMessage({ ready: true });
