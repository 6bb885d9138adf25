import { describe, expect, it } from "vitest";
import { Rng } from "./rng.js";
import { sampleToken } from "./sample.js";

const logits = Float32Array.from([2, 1, 0.5, 0, -1, -3]);
const logSoftmax = (values: Float32Array, temperature = 1): number[] => {
  const scaled = [...values].map((x) => x / temperature);
  const max = Math.max(...scaled);
  const lse = max + Math.log(scaled.reduce((s, x) => s + Math.exp(x - max), 0));
  return scaled.map((x) => x - lse);
};
const draw = (settings: { temperature: number; topK: number; topP: number }, seed: number, n: number) => {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => sampleToken(logits, settings, rng));
};

describe("sampleToken", () => {
  it("greedy picks the argmax and reports its log-softmax under the raw logits", () => {
    const { tokenId, logprob } = sampleToken(logits, { temperature: 0, topK: 0, topP: 1 }, new Rng(1));
    expect(tokenId).toBe(0);
    expect(logprob).toBeCloseTo(logSoftmax(logits)[0]!, 10);
  });

  it("at temperature 1 without filters the logprob is the model's log-softmax", () => {
    for (const s of draw({ temperature: 1, topK: 0, topP: 1 }, 7, 50))
      expect(s.logprob).toBeCloseTo(logSoftmax(logits)[s.tokenId]!, 10);
  });

  it("reports the logprob under the temperature-scaled distribution", () => {
    for (const s of draw({ temperature: 0.5, topK: 0, topP: 1 }, 3, 50))
      expect(s.logprob).toBeCloseTo(logSoftmax(logits, 0.5)[s.tokenId]!, 10);
  });

  it("top-k samples only the k best tokens and renormalises over them", () => {
    const samples = draw({ temperature: 1, topK: 2, topP: 1 }, 11, 300);
    expect(new Set(samples.map((s) => s.tokenId))).toEqual(new Set([0, 1]));
    const kept = Math.log(Math.exp(2) + Math.exp(1));
    for (const s of samples) expect(s.logprob).toBeCloseTo(logits[s.tokenId]! - kept, 6);
  });

  it("top-p keeps the smallest nucleus whose mass reaches p", () => {
    const p = logSoftmax(logits).map(Math.exp); // ≈ [0.57, 0.21, 0.13, 0.08, 0.03, 0.004]
    expect(p[0]! + p[1]!).toBeLessThan(0.8);
    expect(p[0]! + p[1]! + p[2]!).toBeGreaterThan(0.8);
    const samples = draw({ temperature: 1, topK: 0, topP: 0.8 }, 5, 400);
    expect(new Set(samples.map((s) => s.tokenId))).toEqual(new Set([0, 1, 2]));
    const mass = p[0]! + p[1]! + p[2]!;
    for (const s of samples) expect(s.logprob).toBeCloseTo(Math.log(p[s.tokenId]! / mass), 6);
  });

  it("the same seed gives the same tokens; another seed differs", () => {
    const settings = { temperature: 1, topK: 0, topP: 1 };
    const a = draw(settings, 42, 40).map((s) => s.tokenId);
    expect(draw(settings, 42, 40).map((s) => s.tokenId)).toEqual(a);
    expect(draw(settings, 43, 40).map((s) => s.tokenId)).not.toEqual(a);
  });

  it("samples tokens at their probabilities", () => {
    const samples = draw({ temperature: 1, topK: 0, topP: 1 }, 9, 4000);
    const share = samples.filter((s) => s.tokenId === 0).length / samples.length;
    expect(share).toBeGreaterThan(0.53);
    expect(share).toBeLessThan(0.61);
  });
});
