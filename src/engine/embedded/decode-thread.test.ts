/**
 * @module Tests of decoding on more than one thread (`decodeThreads`): calls spread over this thread's loop and a
 * decode worker's, give the one-thread engine's tokens, follow weight updates, stream, end on abort and on a throwing
 * callback as in-process, and a failed worker fails only its own calls.
 */
import { getEventListeners } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GenerationRequest, GenerationResult, LossConfig, OptimizerConfig, TrainRow } from "../engine.js";
import { type DecodeThread, DecodeWorkerFailed } from "./decode-thread.js";
import { EmbeddedEngine, EngineDisposed } from "./engine.js";

const config = { vocab: 261, d_model: 32, n_layers: 2, n_heads: 2, context: 64 };
const request = (prompt: number[], seed: number, maxTokens = 24): GenerationRequest => ({
  promptTokenIds: prompt,
  sampling: { temperature: 1, topP: 1, topK: 0, maxTokens, stopTokenIds: [], stop: [], seed },
});
const prompts = [[10, 20, 30], [7], [1, 2, 3, 4, 5, 6, 7, 8, 9], [100, 101], [42, 43, 44, 45], [3]];

let engines: EmbeddedEngine[] = [];
async function engineWith(decodeThreads: number): Promise<EmbeddedEngine> {
  const engine = await EmbeddedEngine.create({ config, seed: 3, decodeThreads });
  engines.push(engine);
  const deadline = Date.now() + 30_000;
  while (engine.readyDecodeThreads < decodeThreads - 1 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(engine.readyDecodeThreads).toBe(decodeThreads - 1);
  return engine;
}
afterEach(() => {
  for (const e of engines) e.dispose();
  engines = [];
});

/** The engine's decode worker handles (private; read here to see where calls went). */
const workersOf = (engine: EmbeddedEngine): DecodeThread[] => engine["decodeThreads"];

/** Starts one call on this thread's loop and returns the one started next, which lands on the (idle) worker. */
function callOnWorker(
  engine: EmbeddedEngine,
  requests: GenerationRequest[],
  options?: Parameters<EmbeddedEngine["generate"]>[1],
): { busy: Promise<GenerationResult[]>; call: Promise<GenerationResult[]> } {
  const busy = engine.generate([request([1, 2, 3], 99, 8)]);
  const call = engine.generate(requests, options);
  expect(workersOf(engine)[0]!.load).toBe(requests.length);
  return { busy, call };
}

const sameResults = (got: GenerationResult[], expected: GenerationResult[]): void => {
  expect(got.map((r) => r.tokenIds)).toEqual(expected.map((r) => r.tokenIds));
  got.forEach((r, i) => {
    r.logprobs.forEach((lp, t) => {
      expect(Math.abs(lp - expected[i]!.logprobs[t]!)).toBeLessThan(1e-5);
    });
    expect([r.finishReason, r.policyVersion]).toEqual([expected[i]!.finishReason, expected[i]!.policyVersion]);
  });
};

describe("EmbeddedEngine decodeThreads", () => {
  it("spreads concurrent calls over both loops and gives the one-thread engine's tokens and logprobs", async () => {
    const [one, two] = [await engineWith(1), await engineWith(2)];
    const calls = prompts.map((p, i) => two.generate([request(p, i)]));
    expect(workersOf(two)[0]!.load).toBe(3); // every other call
    const got = (await Promise.all(calls)).map(([r]) => r!);
    const expected = (await Promise.all(prompts.map((p, i) => one.generate([request(p, i)])))).map(([r]) => r!);
    sameResults(got, expected);
    expect(workersOf(two)[0]!.load).toBe(0);
  }, 60_000);

  it("a call on the worker after a train step or a checkpoint load decodes with the new weights and reports the new version", async () => {
    const [one, two] = [await engineWith(1), await engineWith(2)];
    const row: TrainRow = { tokenIds: [5, 6, 7, 8, 9, 10, 11, 12], lossMask: [0, 0, 0, 0, 1, 1, 1, 1], advantages: [] };
    row.advantages = row.tokenIds.map(() => 0);
    const sft: LossConfig = { kind: "sft", aggregation: "token-mean" };
    const settings: OptimizerConfig = { learningRate: 3e-2, weightDecay: 0, maxGradNorm: 1, microBatchSize: 2 };
    for (const engine of [one, two]) await engine.trainStep([row, row], sft, settings);
    const asked = prompts.slice(0, 3).map((p, i) => request(p, 10 + i));
    const { busy, call } = callOnWorker(two, asked);
    await busy;
    const expected = await one.generate(asked);
    expect(expected.every((r) => r.policyVersion === 1)).toBe(true);
    sameResults(await call, expected);
    // A second step on the one-thread engine only, loaded into the other as a checkpoint (version 1 + 1 there too).
    await one.trainStep([row, row], sft, settings);
    const dir = mkdtempSync(join(tmpdir(), "decode-thread-"));
    try {
      await one.saveCheckpoint(dir);
      await two.loadCheckpoint(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const again = callOnWorker(two, asked);
    await again.busy;
    const expectedAgain = await one.generate(asked);
    expect(expectedAgain.every((r) => r.policyVersion === 2)).toBe(true);
    sameResults(await again.call, expectedAgain);
  }, 60_000);

  it("streams the worker's tokens in order; a throwing callback ends its sequence at that token; an abort ends the call", async () => {
    const two = await engineWith(2);
    const seen: number[][] = [[], []];
    const streamed = callOnWorker(two, [request([4, 5], 1, 40), request([6, 7], 2, 40)], {
      onToken: (index, token) => {
        seen[index]!.push(token.tokenId);
        if (index === 1 && seen[1]!.length === 3) throw new Error("client went away");
      },
    });
    const [first, second] = await streamed.call;
    await streamed.busy;
    expect(seen[0]).toEqual(first!.tokenIds);
    expect(second!.tokenIds).toEqual(seen[1]);
    expect(second!.tokenIds).toHaveLength(3);
    expect([second!.finishReason, second!.stopReason]).toEqual(["abort", null]);

    const controller = new AbortController();
    let count = 0;
    const aborted = callOnWorker(two, [request([8, 9], 3, 60)], {
      signal: controller.signal,
      onToken: () => {
        count += 1;
        if (count === 5) controller.abort();
      },
    });
    const [cut] = await aborted.call;
    await aborted.busy;
    expect(cut!.tokenIds).toHaveLength(5);
    expect(cut!.finishReason).toBe("abort");
    const [early] = await two.generate([request([8, 9], 3, 60)], { signal: AbortSignal.abort() });
    expect([early!.tokenIds, early!.finishReason]).toEqual([[], "abort"]);
  }, 60_000);

  it("a worker that fails fails its own calls with DecodeWorkerFailed; later calls run on this thread until a new worker is ready", async () => {
    const two = await engineWith(2);
    const { busy, call } = callOnWorker(two, [request([4, 5], 1, 40)]);
    workersOf(two)[0]!.terminate();
    await expect(call).rejects.toBeInstanceOf(DecodeWorkerFailed);
    await busy;
    expect(two.readyDecodeThreads).toBe(0);
    const [after] = await two.generate([request([4, 5], 1, 8)]); // runs here, and starts a new worker
    expect(after!.tokenIds).toHaveLength(8);
    const deadline = Date.now() + 30_000;
    while (two.readyDecodeThreads < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const again = callOnWorker(two, [request([4, 5], 1, 8)]);
    const [onNew] = await again.call;
    await again.busy;
    expect(onNew!.tokenIds).toEqual(after!.tokenIds);
  }, 60_000);

  it("an abort without a stream keeps what the worker decoded, as in-process; a sequence that ended itself keeps its end", async () => {
    const two = await engineWith(2);
    const busy = two.generate([1, 2, 3].map((seed) => request([1, 2, 3], 90 + seed, 40))); // this thread: 3 rows
    const controller = new AbortController();
    let seen = 0;
    const streamed = two.generate([request([4, 5], 1, 40)], {
      onToken: () => {
        seen += 1;
        if (seen === 10) controller.abort();
      },
    });
    const quiet = two.generate([request([6, 7], 2, 50), request([8, 9], 3, 2)], { signal: controller.signal });
    expect(workersOf(two)[0]!.load).toBe(3);
    const [[cut, short]] = await Promise.all([quiet, streamed, busy]);
    expect(cut!.finishReason).toBe("abort");
    expect(cut!.tokenIds.length).toBeGreaterThanOrEqual(5);
    expect(cut!.tokenIds.length).toBeLessThan(50);
    expect([short!.tokenIds.length, short!.finishReason]).toEqual([2, "length"]);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  }, 60_000);

  it("calls sharing a signal put one listener on it while they run and leave none behind, on either loop", async () => {
    const two = await engineWith(2);
    const signal = new AbortController().signal;
    const calls = Array.from({ length: 30 }, (_, i) => two.generate([request([1 + (i % 7), 2], i, 4)], { signal }));
    expect(workersOf(two)[0]!.load).toBeGreaterThan(0);
    expect(getEventListeners(signal, "abort")).toHaveLength(1);
    await Promise.all(calls);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  }, 60_000);

  it("a call whose signal aborted already ends every sequence before its first token on the worker too", async () => {
    const two = await engineWith(2);
    const asked = [request([4, 5], 1, 40), request([6], 2, 40), request([7, 8, 9], 3, 40)];
    const { busy, call } = callOnWorker(two, asked, { signal: AbortSignal.abort() });
    const results = await call;
    await busy;
    expect(results.map((r) => [r.tokenIds.length, r.finishReason])).toEqual([
      [0, "abort"],
      [0, "abort"],
      [0, "abort"],
    ]);
  }, 60_000);

  it("a checkpoint load or a 2-thread train step in flight when dispose runs fails with EngineDisposed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "decode-thread-"));
    try {
      const engine = await EmbeddedEngine.create({ config, seed: 3, trainThreads: 2 });
      await engine.saveCheckpoint(dir);
      const loading = engine.loadCheckpoint(dir);
      const row: TrainRow = { tokenIds: [5, 6, 7, 8], lossMask: [0, 0, 1, 1], advantages: [0, 0, 0, 0] };
      const sft: LossConfig = { kind: "sft", aggregation: "token-mean" };
      const settings: OptimizerConfig = { learningRate: 1e-2, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 };
      const training = engine.trainStep([row, row, row, row], sft, settings);
      engine.dispose();
      // Both awaited together: a rejection with no handler yet would be an unhandled one.
      await Promise.all([
        expect(loading).rejects.toBeInstanceOf(EngineDisposed),
        expect(training).rejects.toBeInstanceOf(EngineDisposed),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("dispose fails the calls in flight on both loops with EngineDisposed, and every later call", async () => {
    const two = await engineWith(2);
    const { busy, call } = callOnWorker(two, [request([4, 5], 1, 60)]);
    two.dispose();
    await expect(busy).rejects.toBeInstanceOf(EngineDisposed);
    await expect(call).rejects.toBeInstanceOf(EngineDisposed);
    await expect(two.generate([request([4, 5], 1, 4)])).rejects.toBeInstanceOf(EngineDisposed);
    await expect(two.logprobs([[1, 2, 3]])).rejects.toBeInstanceOf(EngineDisposed);
    two.dispose(); // idempotent
  }, 60_000);

  it("refuses a decodeThreads that is not an integer from 1 to 64", async () => {
    await expect(EmbeddedEngine.create({ config, decodeThreads: 0 })).rejects.toThrow(/decodeThreads/);
    const text = "2" as unknown as number;
    await expect(EmbeddedEngine.create({ config, decodeThreads: text })).rejects.toThrow(/got "2"/);
    const none = null as unknown as number;
    await expect(EmbeddedEngine.create({ config, decodeThreads: none })).rejects.toThrow(/got null/);
    const big = 2n as unknown as number;
    await expect(EmbeddedEngine.create({ config, decodeThreads: big })).rejects.toThrow(/got 2$/);
    await expect(EmbeddedEngine.create({ config, decodeThreads: 2.5 })).rejects.toThrow(RangeError);
    await expect(EmbeddedEngine.create({ config, decodeThreads: 65 })).rejects.toThrow(/from 1 to 64/);
  });
});
