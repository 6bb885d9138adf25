/**
 * @module The behaviour every `Engine` must show, as a reusable vitest suite: the embedded engine runs it, and a GPU
 * engine added later runs the same cases (skipping one only with a stated reason).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Engine, SamplingParams, TrainRow } from "./engine.js";

const sampling = (overrides: Partial<SamplingParams> = {}): SamplingParams => ({
  temperature: 1,
  topP: 1,
  topK: 0,
  maxTokens: 6,
  stopTokenIds: [],
  stop: [],
  seed: 1,
  ...overrides,
});

/**
 * Registers the engine contract cases.
 * @param name - suite name
 * @param makeEngine - builds a fresh engine with a context of at least 16 tokens and a vocabulary of at least 261
 */
export function runEngineContract(name: string, makeEngine: () => Promise<Engine>): void {
  describe(`Engine contract: ${name}`, () => {
    it("generate returns one result per request with matching token ids and logprobs", async () => {
      const engine = await makeEngine();
      try {
        const results = await engine.generate([
          { promptTokenIds: [1, 2, 3], sampling: sampling() },
          { promptTokenIds: [4], sampling: sampling({ maxTokens: 3, seed: 2 }) },
        ]);
        expect(results).toHaveLength(2);
        expect(results[0]!.promptTokenIds).toEqual([1, 2, 3]);
        expect(results[1]!.tokenIds.length).toBeLessThanOrEqual(3);
        for (const r of results) {
          expect(r.logprobs).toHaveLength(r.tokenIds.length);
          for (const lp of r.logprobs) expect(lp).toBeLessThanOrEqual(0);
          expect(r.policyVersion).toBe(engine.policyVersion);
        }
      } finally {
        engine.dispose();
      }
    });

    it("logprobs are ragged like the input with 0 at position 0, and agree with sampled logprobs", async () => {
      const engine = await makeEngine();
      try {
        const [r] = await engine.generate([{ promptTokenIds: [5, 6], sampling: sampling() }]);
        const scored = await engine.logprobs([[5, 6, ...r!.tokenIds], [9]]);
        expect(scored.map((row) => row.length)).toEqual([2 + r!.tokenIds.length, 1]);
        expect(scored[0]![0]).toBe(0);
        r!.logprobs.forEach((lp, t) => {
          expect(Math.abs(lp - scored[0]![2 + t]!)).toBeLessThan(1e-4);
        });
      } finally {
        engine.dispose();
      }
    });

    it("its tokenizer round-trips text and its chat template stops on special ids of its vocabulary", async () => {
      const engine = await makeEngine();
      try {
        const { tokenizer, chatTemplate } = engine;
        const text = "2+2 = 4, é 😀";
        expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
        const prompt = chatTemplate.render([{ role: "user", content: text }]);
        expect(prompt.every((id) => Number.isInteger(id) && id >= 0 && id < tokenizer.vocabSize)).toBe(true);
        const { startId, endId } = chatTemplate.toolCalls;
        for (const id of [...chatTemplate.stopTokenIds, startId, endId]) expect(tokenizer.isSpecial(id)).toBe(true);
      } finally {
        engine.dispose();
      }
    });

    it("a prompt that does not fit the context is rejected with a RangeError", async () => {
      const engine = await makeEngine();
      try {
        const prompt = Array.from({ length: engine.contextLength }, () => 1);
        await expect(engine.generate([{ promptTokenIds: prompt, sampling: sampling() }])).rejects.toThrow(RangeError);
      } finally {
        engine.dispose();
      }
    });

    it("trainStep bumps the policy version and a checkpoint round trip keeps logprobs", async () => {
      const engine = await makeEngine();
      const other = await makeEngine();
      const dir = await mkdtemp(join(tmpdir(), "arclight-contract-"));
      try {
        const row: TrainRow = { tokenIds: [1, 2, 3, 4], lossMask: [0, 0, 1, 1], advantages: [0, 0, 1, 1] };
        const metrics = await engine.trainStep(
          [row],
          { kind: "ppo", clipLow: 0.2, clipHigh: 0.2, klCoef: 0, aggregation: "token-mean" },
          { learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 },
        );
        expect(metrics.tokens).toBe(2);
        expect(Number.isFinite(metrics.loss)).toBe(true);
        expect(engine.policyVersion).toBe(1);
        await engine.saveCheckpoint(dir);
        const before = other.policyVersion;
        await other.loadCheckpoint(dir);
        expect(other.policyVersion).toBe(before + 1);
        expect(await other.logprobs([[1, 2, 3, 4]])).toEqual(await engine.logprobs([[1, 2, 3, 4]]));
      } finally {
        engine.dispose();
        other.dispose();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}
