import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import type { LossConfig } from "../engine.js";
import { initWasmBackend } from "./backend.js";
import { k3, microBatchLoss, type TokenTensors } from "./loss.js";

beforeAll(() => initWasmBackend());

const ppo: LossConfig = { kind: "ppo", clipLow: 0.2, clipHigh: 0.3, klCoef: 0, aggregation: "token-mean" };

/** Runs the loss on per-token arrays and reads back the scalars. */
function run(
  arrays: {
    logprobs: number[];
    old?: number[];
    ref?: number[];
    is?: number[];
    adv: number[];
    mask: number[];
    w?: number[];
  },
  config: LossConfig,
  denominator: number,
): { loss: number; clipped: number; kl: number } {
  return tf.tidy(() => {
    const t = (x: number[]) => tf.tensor1d(x);
    const tokens: TokenTensors = {
      logprobs: t(arrays.logprobs),
      mask: t(arrays.mask),
      weights: t(arrays.w ?? arrays.mask.map(() => 1)),
      advantages: t(arrays.adv),
      oldLogprobs: arrays.old ? t(arrays.old) : null,
      refLogprobs: arrays.ref ? t(arrays.ref) : null,
      isWeights: arrays.is ? t(arrays.is) : null,
    };
    const parts = microBatchLoss(tokens, config, denominator);
    return {
      loss: parts.loss.dataSync()[0]!,
      clipped: parts.clippedTokens.dataSync()[0]!,
      kl: parts.approxKlSum.dataSync()[0]!,
    };
  });
}

describe("microBatchLoss (PPO)", () => {
  // ratios: 1.1 (inside), 1.5 (above 1+0.3), 0.5 (below 1-0.2), 2.0 (masked out)
  const ratios = [1.1, 1.5, 0.5, 2.0];
  const old = [-1, -2, -0.5, -3];
  const logprobs = ratios.map((r, i) => old[i]! + Math.log(r));
  const mask = [1, 1, 1, 0];

  it("clips the ratio to [1 − clipLow, 1 + clipHigh] on the pessimistic side and averages over masked tokens", () => {
    const adv = [1, 1, -2, 5];
    // token 0: −1·1.1; token 1: max(−1.5, −1.3) = −1.3 (clipped); token 2: max(2·0.5, 2·0.8) = 1.6 (clipped)
    const expected = (-1.1 - 1.3 + 1.6) / 3;
    const out = run({ logprobs, old, adv, mask }, ppo, 3);
    expect(out.loss).toBeCloseTo(expected, 5);
    expect(out.clipped).toBe(2);
  });

  it("does not clip when the clipped side is the optimistic one", () => {
    // A < 0 with ratio 1.5: max(0.5·1.5, 0.5·1.3) = 0.75 is the unclipped term
    const out = run({ logprobs, old, adv: [0, -0.5, 0, 0], mask }, ppo, 3);
    expect(out.loss).toBeCloseTo(0.75 / 3, 5);
    expect(out.clipped).toBe(0);
  });

  it("dual clip caps the loss of negative advantages at −A·c", () => {
    const r = 5;
    const out = run({ logprobs: [-1 + Math.log(r)], old: [-1], adv: [-2], mask: [1] }, { ...ppo, dualClip: 3 }, 1);
    expect(out.loss).toBeCloseTo(2 * 3, 4); // min(max(2·5, 2·1.3), 2·3)
  });

  it("multiplies by truncated importance weights and adds β·k3 KL to the reference", () => {
    const ref = [-1.2, -1.9, -0.7, 0];
    const is = [0.5, 1, 2, 1];
    const adv = [1, 1, -2, 5];
    const k3Of = (refLp: number, lp: number) => Math.exp(refLp - lp) - (refLp - lp) - 1;
    const perToken = [-1.1 * 0.5, -1.3 * 1, 1.6 * 2].map((x, i) => x + 0.1 * k3Of(ref[i]!, logprobs[i]!));
    const out = run({ logprobs, old, ref, is, adv, mask }, { ...ppo, klCoef: 0.1 }, 3);
    expect(out.loss).toBeCloseTo((perToken[0]! + perToken[1]! + perToken[2]!) / 3, 5);
  });

  it("weighted aggregation divides Σ weight·loss by the step's Σ weight", () => {
    const adv = [1, 1, -2, 5];
    const w = [0.5, 0.5, 0.25, 0.25];
    const out = run({ logprobs, old, adv, mask, w }, { ...ppo, aggregation: "weighted" }, 1.25);
    expect(out.loss).toBeCloseTo((0.5 * -1.1 + 0.5 * -1.3 + 0.25 * 1.6) / 1.25, 5);
  });

  it("without old logprobs the ratio is 1 (on-policy) and the loss is −mean(A)", () => {
    const out = run({ logprobs, adv: [1, 2, 3, 9], mask }, ppo, 3);
    expect(out.loss).toBeCloseTo(-2, 5);
    expect(out.kl).toBeCloseTo(0, 6);
  });

  it("SFT is the masked mean negative logprob", () => {
    const out = run(
      { logprobs: [-1, -2, -4], adv: [0, 0, 0], mask: [1, 0, 1] },
      { kind: "sft", aggregation: "token-mean" },
      2,
    );
    expect(out.loss).toBeCloseTo(2.5, 6);
  });
});

describe("k3", () => {
  it("is zero for equal policies and positive otherwise", () => {
    const [same, other] = tf.tidy(() => [
      k3(tf.tensor1d([-1]), tf.tensor1d([-1])).dataSync()[0]!,
      k3(tf.tensor1d([-2]), tf.tensor1d([-1])).dataSync()[0]!,
    ]);
    expect(same).toBeCloseTo(0, 7);
    expect(other).toBeCloseTo(Math.exp(-1) + 1 - 1, 6);
  });
});
