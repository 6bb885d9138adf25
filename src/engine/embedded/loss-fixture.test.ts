/**
 * @module The embedded loss against test/fixtures/loss-cases.json, the hand-computed cases the Python worker's loss
 * (python/tests/test_loss.py) is tested against too, so both engines train with the same formulas.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import type { LossAggregation, LossConfig, PolicyObjective } from "../engine.js";
import { initWasmBackend } from "./backend.js";
import { microBatchLoss } from "./loss.js";

beforeAll(() => initWasmBackend());

/** One case of the fixture (wire names, as the Python side reads them). */
interface LossCase {
  name: string;
  loss: {
    kind: "ppo" | "sft";
    aggregation: LossAggregation;
    objective?: PolicyObjective;
    normalizer?: number;
    clip_low?: number;
    clip_high?: number;
    dual_clip?: number;
    kl_coef?: number;
  };
  tokens: {
    logprobs: number[];
    old_logprobs?: number[];
    ref_logprobs?: number[];
    is_weights?: number[];
    advantages: number[];
    mask: number[];
    weights: number[];
    row_width?: number;
  };
  expected: { loss: number; clipped_tokens: number; approx_kl_sum: number; grad_logprobs: number[] };
}

const fixture = resolve(import.meta.dirname, "../../../test/fixtures/loss-cases.json");
const cases = (JSON.parse(readFileSync(fixture, "utf8")) as { cases: LossCase[] }).cases;

function lossConfig(wire: LossCase["loss"]): LossConfig {
  if (wire.kind === "sft") return { kind: "sft", aggregation: wire.aggregation as "token-mean" | "weighted" };
  return {
    kind: "ppo",
    objective: wire.objective,
    normalizer: wire.normalizer,
    clipLow: wire.clip_low!,
    clipHigh: wire.clip_high!,
    dualClip: wire.dual_clip,
    klCoef: wire.kl_coef ?? 0,
    aggregation: wire.aggregation,
  };
}

describe("embedded loss matches the shared hand-computed fixture", () => {
  for (const c of cases) {
    it(c.name, () => {
      const t = c.tokens;
      const optional = (values?: number[]) => (values ? tf.tensor1d(values) : null);
      const denominator = c.loss.normalizer ?? t.mask.reduce((sum, m, i) => sum + m * t.weights[i]!, 0);
      const config = lossConfig(c.loss);
      let clipped = 0;
      let approxKl = 0;
      const { value, grad } = tf.valueAndGrad((logprobs: tf.Tensor1D) => {
        const parts = microBatchLoss(
          {
            logprobs,
            mask: tf.tensor1d(t.mask),
            weights: tf.tensor1d(t.weights),
            advantages: tf.tensor1d(t.advantages),
            oldLogprobs: optional(t.old_logprobs),
            refLogprobs: optional(t.ref_logprobs),
            isWeights: optional(t.is_weights),
            rowWidth: t.row_width,
          },
          config,
          denominator,
        );
        clipped = parts.clippedTokens.dataSync()[0]!;
        approxKl = parts.approxKlSum.dataSync()[0]!;
        return parts.loss;
      })(tf.tensor1d(t.logprobs));
      expect(value.dataSync()[0]).toBeCloseTo(c.expected.loss, 5);
      expect(clipped).toBe(c.expected.clipped_tokens);
      expect(approxKl).toBeCloseTo(c.expected.approx_kl_sum, 5);
      Array.from(grad.dataSync()).forEach((g, i) => {
        expect(g).toBeCloseTo(c.expected.grad_logprobs[i]!, 5);
      });
    });
  }
});
