import { describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { TrainRow } from "../engine/engine.js";
import { decayedLearningRate, heldOutLoss, splitHeldOut, warmStart } from "./sft.js";

const config = { vocab: 261, d_model: 16, n_layers: 1, n_heads: 2, context: 16 };
const rows: TrainRow[] = [0, 1, 2, 3].map((k) => {
  const tokenIds = Array.from({ length: 10 }, (_, t) => 40 + ((k + t) % 20));
  return { tokenIds, lossMask: tokenIds.map((_, t) => (t >= 4 ? 1 : 0)), advantages: tokenIds.map(() => 0) };
});

describe("warmStart", () => {
  it("runs the given number of SFT steps and lowers the loss on the rows", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    const metrics = await warmStart(engine, rows, { steps: 30, batchSize: 2, learningRate: 1e-2, seed: 0 });
    expect(metrics).toHaveLength(30);
    expect(metrics.at(-1)?.loss).toBeLessThan((metrics[0]?.loss ?? 0) / 2);
    engine.dispose();
  });

  it("decays the learning rate linearly over the last decaySteps steps (the engine gets each step's rate)", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    const rates: number[] = [];
    const recording = new Proxy(engine, {
      get(target, key, receiver) {
        if (key !== "trainStep") return Reflect.get(target, key, receiver);
        return (batch: TrainRow[], loss: never, optimizer: { learningRate: number }) => {
          rates.push(optimizer.learningRate);
          return target.trainStep(batch, loss, optimizer as never);
        };
      },
    });
    await warmStart(recording, rows, { steps: 6, batchSize: 2, learningRate: 0.01, decaySteps: 4, seed: 0 });
    expect(rates.map((r) => Number(r.toFixed(6)))).toEqual([0.01, 0.01, 0.01, 0.0075, 0.005, 0.0025]);
    engine.dispose();
  });

  it("decayedLearningRate: constant without decay steps; with more decay steps than steps, decays from the first", () => {
    expect([1, 2, 3].map((s) => decayedLearningRate({ steps: 3, learningRate: 1 }, s))).toEqual([1, 1, 1]);
    const all = [1, 2].map((s) => decayedLearningRate({ steps: 2, learningRate: 1, decaySteps: 10 }, s));
    expect(all).toEqual([1, 0.5]);
  });

  it("stops between steps once its signal is aborted, even when nothing else yields to the event loop", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    const aborter = new AbortController();
    const steps: number[] = [];
    // Abort from a timer, as a signal handler would: it can only run if the warm start yields between steps.
    setTimeout(() => aborter.abort(new Error("interrupted by SIGINT")), 0);
    await expect(
      warmStart(engine, rows, {
        steps: 10_000,
        batchSize: 2,
        learningRate: 1e-3,
        seed: 0,
        signal: aborter.signal,
        onStep: (step) => steps.push(step),
      }),
    ).rejects.toThrow("interrupted by SIGINT");
    expect(steps.length).toBeLessThan(10_000);
    engine.dispose();
  });

  it("refuses an empty set of rows", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    await expect(warmStart(engine, [], { steps: 1, batchSize: 1, learningRate: 1e-3, seed: 0 })).rejects.toThrow(
      "no demonstration rows",
    );
    engine.dispose();
  });
});

describe("heldOutLoss", () => {
  it("is the mean negative logprob over the masked tokens only", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    const row = rows[0] as TrainRow;
    const [logprobs] = await engine.logprobs([row.tokenIds]);
    // Mask written out: positions 4..9 are trained, 0..3 are the prompt.
    const expected = -((logprobs as number[]).slice(4).reduce((a, b) => a + b, 0) / 6);
    expect(await heldOutLoss(engine, [row])).toBeCloseTo(expected, 5);
    expect(await heldOutLoss(engine, [])).toBeNull();
    engine.dispose();
  });

  it("falls on rows of the training distribution after SFT steps", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 1 });
    const before = (await heldOutLoss(engine, rows)) as number;
    await warmStart(engine, rows, { steps: 20, batchSize: 2, learningRate: 1e-2, seed: 0 });
    expect(await heldOutLoss(engine, rows)).toBeLessThan(before);
    engine.dispose();
  });
});

describe("splitHeldOut", () => {
  it("holds out the given share (at least one row), disjoint from the training rows, the same for the same seed", () => {
    const many = Array.from({ length: 20 }, (_, k) => ({ ...(rows[0] as TrainRow), weight: k }));
    const split = splitHeldOut(many, 0.1, 7);
    expect(split.heldOut).toHaveLength(2);
    expect(split.train).toHaveLength(18);
    const weights = (list: TrainRow[]) => list.map((row) => row.weight);
    expect(new Set([...weights(split.train), ...weights(split.heldOut)]).size).toBe(20);
    expect(weights(splitHeldOut(many, 0.1, 7).heldOut)).toEqual(weights(split.heldOut));
    expect(splitHeldOut(rows.slice(0, 3), 0.1, 7).heldOut).toHaveLength(1);
    expect(splitHeldOut(rows, 0, 7).heldOut).toHaveLength(0);
  });
});
