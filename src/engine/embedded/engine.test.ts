/** @module Runs the Engine contract suite against the embedded engine, then its own input checks. */
import { afterAll, describe, expect, it } from "vitest";
import { runEngineContract } from "../engine.contract.js";
import type { SamplingParams } from "../engine.js";
import { EmbeddedEngine } from "./engine.js";

const config = { vocab: 261, d_model: 32, n_layers: 1, n_heads: 2, context: 24 };

runEngineContract("embedded", () => EmbeddedEngine.create({ config, seed: 2 }));

describe("embedded engine input checks", () => {
  const engine = EmbeddedEngine.create({ config, seed: 2 });
  afterAll(async () => (await engine).dispose());
  const sampling: SamplingParams = { temperature: 1, topP: 1, topK: 0, maxTokens: 4, stopTokenIds: [], stop: [] };

  it("refuses sampling settings the sampler cannot honour, naming the setting", async () => {
    const e = await engine;
    for (const [change, message] of [
      [{ temperature: Number.NaN }, "sampling temperature must be a number >= 0, got NaN"],
      [{ temperature: -1 }, "sampling temperature must be a number >= 0, got -1"],
      [{ topP: 0 }, "sampling topP must be in (0, 1], got 0"],
      [{ topP: 1.5 }, "sampling topP must be in (0, 1], got 1.5"],
      [{ topK: -1 }, "sampling topK must be an integer >= 0, got -1"],
      [{ maxTokens: -1 }, "sampling maxTokens must be an integer >= 0, got -1"],
      [{ maxTokens: 2.5 }, "sampling maxTokens must be an integer >= 0, got 2.5"],
    ] as const)
      await expect(e.generate([{ promptTokenIds: [65, 66], sampling: { ...sampling, ...change } }])).rejects.toThrow(
        new RangeError(message),
      );
    const [ok] = await e.generate([{ promptTokenIds: [65, 66], sampling: { ...sampling, temperature: 0 } }]);
    expect(ok!.tokenIds.length).toBeGreaterThan(0);
  });

  it("refuses a train row with an id outside the vocabulary, and changes nothing", async () => {
    const e = await engine;
    const before = e.policyVersion;
    for (const id of [5000, -1, 1.5])
      await expect(
        e.trainStep(
          [{ tokenIds: [65, id, 66, 67], lossMask: [0, 1, 1, 1], advantages: [0, 0, 0, 0] }],
          { kind: "sft", aggregation: "token-mean" },
          { learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 8 },
        ),
      ).rejects.toThrow(new RangeError(`train row 0: token id ${id} is outside the vocabulary [0, 261)`));
    expect(e.policyVersion).toBe(before);
  });
});
