/**
 * @module Tests of the one-dispatch AdamW update: the same values bit for bit as the tfjs ops of `adamw.ts` over
 * several steps, with and without decay; non-finite results are reported; inputs it does not take get `undefined`;
 * nothing is leaked; and `AdamW` gives the same weights whether a parameter takes the kernel or the ops.
 */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { AdamW } from "./adamw.js";
import { initWasmBackend } from "./backend.js";
import { type AdamwScalars, adamwUpdate } from "./wasm-adamw.js";

/** The update as `adamw.ts` writes it in tfjs ops: [w', m', v']. */
function reference(w: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, s: AdamwScalars): tf.Tensor[] {
  return tf.tidy(() => {
    const nextM = tf.add(tf.mul(m, s.beta1), tf.mul(g, 1 - s.beta1));
    const nextV = tf.add(tf.mul(v, s.beta2), tf.mul(tf.square(g), 1 - s.beta2));
    const adaptive = tf.div(tf.div(nextM, s.correction1), tf.add(tf.sqrt(tf.div(nextV, s.correction2)), s.epsilon));
    const decayed = s.decayFactor !== 1 ? tf.mul(w, s.decayFactor) : w;
    return [tf.sub(decayed, tf.mul(adaptive, s.learningRate)), nextM, nextV];
  });
}

const scalarsAt = (step: number, decayFactor: number): AdamwScalars => ({
  beta1: 0.9,
  beta2: 0.999,
  correction1: 1 - 0.9 ** step,
  correction2: 1 - 0.999 ** step,
  epsilon: 1e-8,
  learningRate: 3e-4,
  decayFactor,
});

describe("AdamW kernel", () => {
  beforeAll(() => initWasmBackend());

  it("equals the tfjs ops bit for bit over five steps, with decay and without", () => {
    for (const decayFactor of [1 - 3e-4 * 0.1, 1]) {
      let [w, m, v] = [tf.randomNormal([37, 12], 0, 1, "float32", 1), tf.zeros([37, 12]), tf.zeros([37, 12])];
      let [rw, rm, rv] = [w.clone(), m.clone(), v.clone()];
      for (let step = 1; step <= 5; step++) {
        const g = tf.randomNormal([37, 12], 0, step, "float32", 10 + step);
        const before = tf.memory().numTensors;
        const fused = adamwUpdate(w, g, m, v, scalarsAt(step, decayFactor))!;
        expect(tf.memory().numTensors).toBe(before + 3);
        expect(fused.finite).toBe(true);
        const expected = reference(rw, g, rm, rv, scalarsAt(step, decayFactor));
        fused.next.forEach((t, i) => {
          expect(t.dataSync()).toEqual(expected[i]!.dataSync());
        });
        tf.dispose([w, m, v, rw, rm, rv, g]);
        [w, m, v] = fused.next;
        [rw, rm, rv] = expected as [tf.Tensor, tf.Tensor, tf.Tensor];
      }
      tf.dispose([w, m, v, rw, rm, rv]);
    }
  });

  it("reports a non-finite result: a NaN or an infinite gradient, a weight that overflows", () => {
    const w = tf.ones([8]);
    const zeros = tf.zeros([8]);
    const cases: [tf.Tensor, tf.Tensor][] = [
      [w, tf.tensor1d([0, 0, 0, 0, 0, Number.NaN, 0, 0])],
      [w, tf.tensor1d([0, 0, Number.POSITIVE_INFINITY, 0, 0, 0, 0, 0])],
      [tf.tensor1d([0, 0, 0, 0, 0, 0, 0, 3e38]), tf.fill([8], 1)],
    ];
    for (const [weight, g] of cases) {
      const out = adamwUpdate(weight, g, zeros, zeros, { ...scalarsAt(1, 2), learningRate: -3e38 })!;
      expect(out.finite).toBe(false);
      tf.dispose(out.next);
    }
    const fine = adamwUpdate(w, tf.fill([8], 1), zeros, zeros, scalarsAt(1, 1))!;
    expect(fine.finite).toBe(true);
  });

  it("declines a size that is not a multiple of 4, a dtype other than float32, or shapes that differ", () => {
    const s = scalarsAt(1, 1);
    expect(adamwUpdate(tf.zeros([6]), tf.zeros([6]), tf.zeros([6]), tf.zeros([6]), s)).toBeUndefined();
    expect(adamwUpdate(tf.zeros([8]), tf.zeros([8], "int32"), tf.zeros([8]), tf.zeros([8]), s)).toBeUndefined();
    expect(adamwUpdate(tf.zeros([8]), tf.zeros([2, 4]), tf.zeros([8]), tf.zeros([8]), s)).toBeUndefined();
  });

  it("AdamW updates a weight the kernel takes and one it does not (size 6) to the reference's values", () => {
    const optimizer = new AdamW();
    const big = tf.variable(tf.randomNormal([16, 4], 0, 1, "float32", 3), true, "adamw-kernel-big");
    const odd = tf.variable(tf.randomNormal([6], 0, 1, "float32", 4), true, "adamw-kernel-odd");
    const [bigStart, oddStart] = [big.clone(), odd.clone()];
    const grads = new Map<string, tf.Tensor>([
      ["big", tf.randomNormal([16, 4], 0, 1, "float32", 5)],
      ["odd", tf.randomNormal([6], 0, 1, "float32", 6)],
    ]);
    const params = [
      { name: "big", variable: big, decay: true },
      { name: "odd", variable: odd, decay: false },
    ];
    expect(optimizer.apply(params, grads, 3e-4, 0.1)).toBe(true);
    const zeros = (t: tf.Tensor) => tf.zerosLike(t);
    const [bigRef] = reference(bigStart, grads.get("big")!, zeros(big), zeros(big), scalarsAt(1, 1 - 3e-4 * 0.1));
    const [oddRef] = reference(oddStart, grads.get("odd")!, zeros(odd), zeros(odd), scalarsAt(1, 1));
    expect(big.dataSync()).toEqual(bigRef!.dataSync());
    expect(odd.dataSync()).toEqual(oddRef!.dataSync());
    expect(optimizer.step).toBe(1);
    optimizer.dispose();
  });
});
