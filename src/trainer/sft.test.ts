import { describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { TrainRow } from "../engine/engine.js";
import { warmStart } from "./sft.js";

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
