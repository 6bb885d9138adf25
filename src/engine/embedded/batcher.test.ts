/** @module Tests of continuous batching through EmbeddedEngine.generate: KV-cache parity, seeds, stops, abort, joins. */
import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import type { GenerationRequest, GenerationResult, SamplingParams } from "../engine.js";
import { Batcher } from "./batcher.js";
import { EmbeddedEngine, EngineDisposed } from "./engine.js";
import type { Gpt } from "./model.js";
import { ByteTokenizer } from "./tokenizer.js";

const config = { vocab: 261, d_model: 32, n_layers: 2, n_heads: 2, context: 48 };
const sampling = (overrides: Partial<SamplingParams> = {}): SamplingParams => ({
  temperature: 1,
  topP: 1,
  topK: 0,
  maxTokens: 16,
  stopTokenIds: [],
  stop: [],
  seed: 1,
  ...overrides,
});
const request = (prompt: number[], overrides: Partial<SamplingParams> = {}): GenerationRequest => ({
  promptTokenIds: prompt,
  sampling: sampling(overrides),
});

let engines: EmbeddedEngine[] = [];
const makeEngine = async (maxBatchSize?: number): Promise<EmbeddedEngine> => {
  const engine = await EmbeddedEngine.create({ config, seed: 3, maxBatchSize });
  engines.push(engine);
  return engine;
};
afterEach(() => {
  for (const e of engines) e.dispose();
  engines = [];
});

describe("EmbeddedEngine.generate", () => {
  it("returns KV-cache logprobs equal to full-forward logprobs (1e-5) for ragged prompts", async () => {
    const engine = await makeEngine();
    const prompts = [[10, 20, 30], [7], [1, 2, 3, 4, 5, 6, 7, 8, 9], [100, 101]];
    const results = await engine.generate(prompts.map((p, i) => request(p, { seed: i, maxTokens: 24 })));
    const full = await engine.logprobs(results.map((r) => [...r.promptTokenIds, ...r.tokenIds]));
    results.forEach((r, i) => {
      expect(r.tokenIds.length).toBeGreaterThan(0);
      const expected = full[i]!.slice(r.promptTokenIds.length);
      r.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - expected[t]!)).toBeLessThan(1e-5);
      });
    });
  });

  it("gives the same tokens for the same seed and different tokens for another seed", async () => {
    const engine = await makeEngine();
    const [a] = await engine.generate([request([5, 6, 7], { seed: 9 })]);
    const [b] = await engine.generate([request([5, 6, 7], { seed: 9 })]);
    const [c] = await engine.generate([request([5, 6, 7], { seed: 10 })]);
    expect(b!.tokenIds).toEqual(a!.tokenIds);
    expect(c!.tokenIds).not.toEqual(a!.tokenIds);
  });

  it("stops at max tokens, at a stop token id (kept in the output) and at a stop string", async () => {
    const engine = await makeEngine();
    const [free] = await engine.generate([request([1, 2], { maxTokens: 12 })]);
    expect(free!.tokenIds).toHaveLength(12);
    expect(free!.finishReason).toBe("length");
    const stopId = free!.tokenIds[4]!;
    const firstAt = free!.tokenIds.indexOf(stopId);
    const [byId] = await engine.generate([request([1, 2], { maxTokens: 12, stopTokenIds: [stopId] })]);
    expect(byId!.tokenIds).toEqual(free!.tokenIds.slice(0, firstAt + 1));
    expect(byId!.finishReason).toBe("stop");
    expect(byId!.stopReason).toBe(stopId);

    // A stop string: the first printable ASCII token of the free run; generation must end right after it.
    const [long] = await engine.generate([request([1, 2], { maxTokens: 30 })]);
    const k = long!.tokenIds.findIndex((id) => id >= 0x21 && id < 0x7f);
    expect(k).toBeGreaterThanOrEqual(0);
    const stop = String.fromCharCode(long!.tokenIds[k]!);
    const [byString] = await engine.generate([request([1, 2], { maxTokens: 30, stop: ["never", stop] })]);
    expect(byString!.tokenIds).toEqual(long!.tokenIds.slice(0, k + 1));
    expect(byString!.finishReason).toBe("stop");
    expect(byString!.stopReason).toBe(stop);
  });

  it("ends with length at the context limit and rejects prompts that leave no room", async () => {
    const engine = await makeEngine();
    const prompt = Array.from({ length: config.context - 3 }, (_, i) => i);
    const [r] = await engine.generate([request(prompt, { maxTokens: 100 })]);
    expect(r!.tokenIds).toHaveLength(3);
    expect(r!.finishReason).toBe("length");
    const full = Array.from({ length: config.context }, () => 1);
    await expect(engine.generate([request(full)])).rejects.toThrow(/does not fit the context of 48 tokens/);
    await expect(engine.generate([request([])])).rejects.toThrow(RangeError);
    await expect(engine.generate([request([999])])).rejects.toThrow(/outside the vocabulary/);
  });

  it("greedy decoding reports the log-softmax of the argmax token", async () => {
    const engine = await makeEngine();
    const [r] = await engine.generate([request([3, 4, 5], { temperature: 0, maxTokens: 8 })]);
    const full = await engine.logprobs([[...r!.promptTokenIds, ...r!.tokenIds]]);
    r!.logprobs.forEach((lp, t) => {
      expect(Math.abs(lp - full[0]![3 + t]!)).toBeLessThan(1e-5);
    });
  });

  it("streams every token through onToken in order before the call resolves", async () => {
    const engine = await makeEngine();
    const seen: number[][] = [[], []];
    const results = await engine.generate([request([1]), request([2, 3], { seed: 4 })], {
      onToken: (index, token) => seen[index]!.push(token.tokenId),
    });
    expect(seen[0]).toEqual(results[0]!.tokenIds);
    expect(seen[1]).toEqual(results[1]!.tokenIds);
  });

  it("an abort signal ends the call's sequences with finishReason abort and keeps the tokens so far", async () => {
    const engine = await makeEngine();
    const controller = new AbortController();
    let count = 0;
    const [r] = await engine.generate([request([1, 2], { maxTokens: 40 })], {
      signal: controller.signal,
      onToken: () => {
        count += 1;
        if (count === 3) controller.abort();
      },
    });
    expect(r!.finishReason).toBe("abort");
    expect(r!.tokenIds).toHaveLength(3);
  });

  it("concurrent calls started at different times join the running batch and each equals its solo result", async () => {
    const engine = await makeEngine();
    const requests = [
      request([1, 2, 3], { seed: 1, maxTokens: 30 }),
      request([9, 8, 7, 6, 5, 4, 3], { seed: 2, maxTokens: 12 }),
      request([42], { seed: 3, maxTokens: 20, topK: 5 }),
    ];
    const solo: GenerationResult[] = [];
    for (const r of requests) solo.push((await engine.generate([r]))[0]!);

    // Start call 0, start call 1 once call 0 has 5 tokens, start call 2 once call 1 has 3 tokens.
    const produced = [0, 0, 0];
    const progressAtStart: number[][] = [];
    const calls: Promise<unknown>[] = [];
    const start = (i: number): void => {
      progressAtStart.push([...produced]);
      calls[i] = engine.generate([requests[i]!], {
        onToken: () => {
          produced[i]! += 1;
          if (i === 0 && produced[0] === 5) start(1);
          if (i === 1 && produced[1] === 3) start(2);
        },
      });
    };
    start(0);
    await calls[0]; // calls 1 and 2 are created while call 0 runs
    const results = await Promise.all(calls as Promise<Awaited<ReturnType<typeof engine.generate>>>[]);
    results.forEach((r, i) => {
      expect(r[0]!.tokenIds).toEqual(solo[i]!.tokenIds);
      r[0]!.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - solo[i]!.logprobs[t]!)).toBeLessThan(1e-5);
      });
    });
    // Calls 1 and 2 started while call 0 was still running, so all three were decoded together.
    expect(progressAtStart[2]![0]).toBeLessThan(requests[0]!.sampling.maxTokens);
  });

  it("sequences of one call may finish at different steps and each keeps its own result", async () => {
    const engine = await makeEngine();
    const results = await engine.generate([
      request([1], { maxTokens: 2 }),
      request([1], { maxTokens: 0 }),
      request([1], { maxTokens: 9 }),
    ]);
    expect(results.map((r) => r.tokenIds.length)).toEqual([2, 0, 9]);
    expect(results.map((r) => r.finishReason)).toEqual(["length", "length", "length"]);
  });

  it("more sequences than batch rows wait for a free row and still equal their solo results", async () => {
    const engine = await makeEngine(2);
    const requests = [1, 2, 3, 4, 5].map((i) => request([i, i + 1], { seed: i, maxTokens: 4 + i }));
    const solo: GenerationResult[] = [];
    for (const r of requests) solo.push((await engine.generate([r]))[0]!);
    const together = await engine.generate(requests);
    expect(together.map((r) => r.tokenIds)).toEqual(solo.map((r) => r.tokenIds));
  });

  it("a throwing onToken aborts only its own call's sequence; other calls finish normally", async () => {
    const engine = await makeEngine();
    const broken = engine.generate([request([1, 2], { maxTokens: 10 })], {
      onToken: () => {
        throw new Error("client went away");
      },
    });
    const healthy = engine.generate([request([3, 4], { maxTokens: 10 })]);
    const [[b], [h]] = await Promise.all([broken, healthy]);
    expect(b!.finishReason).toBe("abort");
    expect(b!.tokenIds).toHaveLength(1);
    expect(h!.finishReason).toBe("length");
    expect(h!.tokenIds).toHaveLength(10);
  });

  it("a train step between decode steps leaves running sequences going; they report the version they started on", async () => {
    const engine = await makeEngine();
    let training: Promise<unknown> | undefined;
    const [r] = await engine.generate([request([1, 2], { maxTokens: 12 })], {
      onToken: () => {
        training ??= engine.trainStep(
          [{ tokenIds: [1, 2, 3], lossMask: [0, 1, 1], advantages: [0, 1, 1] }],
          { kind: "sft", aggregation: "token-mean" },
          { learningRate: 1e-2, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 },
        );
      },
    });
    await training;
    expect(r!.tokenIds).toHaveLength(12);
    expect(r!.policyVersion).toBe(0);
    expect(engine.policyVersion).toBe(1);
    const [next] = await engine.generate([request([1, 2], { maxTokens: 2 })]);
    expect(next!.policyVersion).toBe(1);
  });
});

describe("Batcher failures", () => {
  it("a prefill that throws fails the joining calls and the next ones too (none is left pending)", async () => {
    // A model whose forward pass throws: the failure the loop meets when the weights are gone (the model disposed).
    const broken = {
      config: { ...config },
      forward: () => {
        throw new Error("prefill failed");
      },
    } as unknown as Gpt;
    const batcher = new Batcher(broken, { tokenizer: new ByteTokenizer(), maxBatchSize: 4, policyVersion: () => 0 });
    const first = batcher.submit([request([1, 2, 3])]);
    const second = batcher.submit([request([4, 5])]);
    await expect(first).rejects.toThrow("prefill failed");
    await expect(second).rejects.toThrow("prefill failed");
    expect(batcher.load).toEqual({ running: 0, pending: 0 });
  });

  it("close fails the calls in flight and every later call with its reason, and removes their abort listeners", async () => {
    const engine = await makeEngine();
    const signal = new AbortController().signal;
    const inFlight = engine.generate([request([1, 2], { maxTokens: 40 })], { signal });
    engine.dispose();
    await expect(inFlight).rejects.toBeInstanceOf(EngineDisposed);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    await expect(engine.generate([request([1, 2])])).rejects.toThrow("the embedded engine was disposed");
  });

  it("a finished call removes its abort listener", async () => {
    const engine = await makeEngine();
    const signal = new AbortController().signal;
    await Promise.all([1, 2, 3].map((seed) => engine.generate([request([seed], { maxTokens: 3 })], { signal })));
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });
});
