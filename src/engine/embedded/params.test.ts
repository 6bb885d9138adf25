/** @module Tests of weight naming, shapes and seeded initialisation. */
import { describe, expect, it } from "vitest";
import { MODEL_PRESETS } from "./config.js";
import { initialValues, paramSpecs, sinusoidalPositions } from "./params.js";

describe("params", () => {
  it("the bench preset has the 0.84M-param shape of the speed targets (plus the 261-token vocabulary)", () => {
    const count = paramSpecs(MODEL_PRESETS.bench).reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
    // 4 blocks × (12·128² + 13·128) + 2·261·128 (embedding + head) + 128·128 (positions) + 2·128 (final norm)
    expect(count).toBe(4 * (12 * 128 * 128 + 13 * 128) + 2 * 261 * 128 + 128 * 128 + 2 * 128);
  });

  it("the same seed gives bit-identical weights and another seed different ones", () => {
    const config = { vocab: 261, d_model: 16, n_layers: 1, n_heads: 2, context: 8 };
    const a = initialValues(config, 1);
    const b = initialValues(config, 1);
    const c = initialValues(config, 2);
    for (const [name, values] of a) expect(b.get(name)).toEqual(values);
    expect(c.get("wte")).not.toEqual(a.get("wte"));
    expect(a.get("h.0.ln_1.weight")!.every((x) => x === 1)).toBe(true);
    expect(a.get("h.0.attn.c_attn.bias")!.every((x) => x === 0)).toBe(true);
  });

  it("initialises normal weights at std 0.02 and residual projections at 0.02 / sqrt(2·n_layers)", () => {
    const config = { vocab: 261, d_model: 64, n_layers: 2, n_heads: 2, context: 32 };
    const values = initialValues(config, 3);
    const std = (x: Float32Array): number => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
    expect(std(values.get("h.0.mlp.c_fc.weight")!)).toBeCloseTo(0.02, 3);
    expect(std(values.get("h.1.mlp.c_proj.weight")!)).toBeCloseTo(0.02 / 2, 3);
  });

  it("a sinusoidal position start replaces only wpe: sin/cos pairs at RMS 0.02, the other weights unchanged", () => {
    const config = { vocab: 261, d_model: 64, n_layers: 1, n_heads: 2, context: 32 };
    const normal = initialValues(config, 4);
    const sinusoidal = initialValues(config, 4, "sinusoidal");
    for (const [name, values] of normal) if (name !== "wpe") expect(sinusoidal.get(name)).toEqual(values);
    const wpe = sinusoidal.get("wpe")!;
    expect(wpe).toEqual(sinusoidalPositions(32, 64));
    const a = 0.02 * Math.SQRT2;
    // Position 0: sin 0 = 0 in even columns, cos 0 = 1 in odd ones; position 3, pair 1: angle 3 / 10000^(2/64).
    expect(wpe[0]).toBe(0);
    expect(wpe[1]).toBeCloseTo(a, 7);
    expect(wpe[3 * 64 + 2]).toBeCloseTo(a * Math.sin(3 / 10000 ** (2 / 64)), 7);
    expect(wpe[3 * 64 + 3]).toBeCloseTo(a * Math.cos(3 / 10000 ** (2 / 64)), 7);
    const rms = Math.sqrt(wpe.reduce((s, v) => s + v * v, 0) / wpe.length);
    expect(rms).toBeCloseTo(0.02, 4);
  });
});
