/** @module Tests of checkpoint save/load: identical logprobs, exact training resume, hot swap, bad directories. */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CheckpointInvalid } from "../checkpoint-error.js";
import type { LossConfig, OptimizerConfig, TrainRow } from "../engine.js";
import { ADAMW_DEFAULTS } from "./adamw.js";
import { readCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { EmbeddedEngine } from "./engine.js";
import { paramSpecs } from "./params.js";
import { Rng } from "./rng.js";
import { decodeSafeTensors, encodeSafeTensors } from "./safetensors.js";

const config = { vocab: 261, d_model: 32, n_layers: 2, n_heads: 2, context: 16 };
const loss: LossConfig = { kind: "ppo", clipLow: 0.2, clipHigh: 0.28, klCoef: 0, aggregation: "token-mean" };
const adam: OptimizerConfig = { learningRate: 5e-3, weightDecay: 0.1, maxGradNorm: 1, microBatchSize: 2 };

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups) await c();
  cleanups = [];
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), "arclight-ckpt-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
};
const track = (engine: EmbeddedEngine): EmbeddedEngine => {
  cleanups.push(() => engine.dispose());
  return engine;
};
const batches = (count: number): TrainRow[][] => {
  const rng = new Rng(8);
  return Array.from({ length: count }, () =>
    Array.from({ length: 4 }, () => {
      const tokenIds = Array.from({ length: 10 }, () => Math.floor(rng.nextFloat() * 261));
      return {
        tokenIds,
        lossMask: tokenIds.map((_, t) => (t >= 4 ? 1 : 0)),
        advantages: tokenIds.map(() => rng.nextFloat() - 0.5),
      };
    }),
  );
};

describe("checkpoints", () => {
  it("save then load gives identical logprobs and the saved policy version", async () => {
    const engine = track(await EmbeddedEngine.create({ config, seed: 4 }));
    await engine.trainStep(batches(1)[0]!, loss, adam);
    const dir = await tempDir();
    await engine.saveCheckpoint(dir);
    const loaded = track(await EmbeddedEngine.load(dir));
    const probe = [
      [1, 2, 3, 4, 5],
      [200, 100, 50],
    ];
    expect(await loaded.logprobs(probe)).toEqual(await engine.logprobs(probe));
    expect(loaded.policyVersion).toBe(1);
    expect(JSON.parse(await readFile(join(dir, "config.json"), "utf8"))).toEqual(config);
    const weights = decodeSafeTensors(await readFile(join(dir, "model.safetensors")));
    expect(weights.tensors.get("wte")!.shape).toEqual([261, 32]);
    expect(weights.metadata.policy_version).toBe("1");
  });

  it("training resumed from a checkpoint equals uninterrupted training (same losses and weights)", async () => {
    const steps = batches(4);
    const straight = track(await EmbeddedEngine.create({ config, seed: 4 }));
    const straightLosses: number[] = [];
    for (const rows of steps) straightLosses.push((await straight.trainStep(rows, loss, adam)).loss);

    const first = track(await EmbeddedEngine.create({ config, seed: 4 }));
    const resumedLosses: number[] = [];
    for (const rows of steps.slice(0, 2)) resumedLosses.push((await first.trainStep(rows, loss, adam)).loss);
    const dir = await tempDir();
    await first.saveCheckpoint(dir);
    const second = track(await EmbeddedEngine.load(dir));
    for (const rows of steps.slice(2)) resumedLosses.push((await second.trainStep(rows, loss, adam)).loss);

    expect(resumedLosses).toEqual(straightLosses);
    const probe = [[3, 1, 4, 1, 5, 9, 2, 6]];
    expect(await second.logprobs(probe)).toEqual(await straight.logprobs(probe));
  });

  it("resetOptimizer keeps the weights and trains on as a fresh optimiser would from them", async () => {
    const steps = batches(3);
    const probe = [[3, 1, 4, 1, 5, 9, 2, 6]];
    const trained = track(await EmbeddedEngine.create({ config, seed: 4 }));
    const carried = track(await EmbeddedEngine.create({ config, seed: 4 }));
    for (const rows of steps.slice(0, 2)) {
      await trained.trainStep(rows, loss, adam);
      await carried.trainStep(rows, loss, adam);
    }
    const before = await trained.logprobs(probe);
    trained.resetOptimizer();
    expect(await trained.logprobs(probe)).toEqual(before);
    const dir = await tempDir();
    await trained.saveCheckpoint(dir);
    const saved = await readCheckpoint(dir);
    expect(saved.optimizer.step).toBe(0);
    expect(saved.optimizer.moments.size).toBe(0);

    // From the same weights: the reset engine's next update equals a fresh optimiser's, and differs from the
    // update of one that kept its moments.
    const fresh = track(await EmbeddedEngine.load(dir));
    for (const engine of [trained, fresh, carried]) await engine.trainStep(steps[2] ?? [], loss, adam);
    expect(await trained.logprobs(probe)).toEqual(await fresh.logprobs(probe));
    expect(await trained.logprobs(probe)).not.toEqual(await carried.logprobs(probe));
  });

  it("loadCheckpoint hot-swaps weights into a running engine and bumps the policy version", async () => {
    const trained = track(await EmbeddedEngine.create({ config, seed: 4 }));
    await trained.trainStep(batches(1)[0]!, loss, adam);
    const dir = await tempDir();
    await trained.saveCheckpoint(dir);
    const serving = track(await EmbeddedEngine.create({ config, seed: 99 }));
    await serving.loadCheckpoint(dir);
    expect(serving.policyVersion).toBe(1);
    const probe = [[7, 7, 7, 7]];
    expect(await serving.logprobs(probe)).toEqual(await trained.logprobs(probe));
  });

  it("refuses a vocab other than the byte tokenizer's 261 ids and a context below 2, from a config and from a checkpoint", async () => {
    for (const vocab of [300, 100])
      await expect(EmbeddedEngine.create({ config: { ...config, vocab }, seed: 1 })).rejects.toThrow(
        new RangeError(
          `model config: vocab must be 261 (the byte tokenizer's ids: 256 bytes and 5 special tokens), got ${vocab}`,
        ),
      );
    await expect(EmbeddedEngine.create({ config: { ...config, context: 1 }, seed: 1 })).rejects.toThrow(/context/);
    // A checkpoint whose weights fit its own config.json (vocab 300), so only the tokenizer can refuse it.
    const wide = { ...config, vocab: 300 };
    const weights = new Map(
      paramSpecs(wide).map((spec) => [
        spec.name,
        { shape: spec.shape, data: new Float32Array(spec.shape.reduce((a, b) => a * b, 1)) },
      ]),
    );
    const dir = await tempDir();
    await writeCheckpoint(dir, {
      config: wide,
      policyVersion: 0,
      weights,
      optimizer: { step: 0, constants: ADAMW_DEFAULTS, moments: new Map() },
    });
    await expect(readCheckpoint(dir)).resolves.toMatchObject({ config: wide });
    await expect(EmbeddedEngine.load(dir)).rejects.toMatchObject({
      name: "CheckpointInvalid",
      kind: "invalid",
      reason: "config.json: vocab must be 261 (the byte tokenizer's ids: 256 bytes and 5 special tokens), got 300",
    });
  });

  it("refuses a checkpoint of another shape and a directory without one", async () => {
    const other = track(await EmbeddedEngine.create({ config: { ...config, d_model: 16 }, seed: 1 }));
    const dir = await tempDir();
    await other.saveCheckpoint(dir);
    const engine = track(await EmbeddedEngine.create({ config, seed: 1 }));
    await expect(engine.loadCheckpoint(dir)).rejects.toThrow(/has config/);
    expect(engine.policyVersion).toBe(0);
    await expect(EmbeddedEngine.load(join(dir, "missing"))).rejects.toMatchObject({
      name: "CheckpointInvalid",
      kind: "missing",
      reason: "no such directory",
    });
  });
});

describe("readCheckpoint refuses what is not a valid checkpoint, saying what is wrong", () => {
  const reasonOf = async (dir: string): Promise<string> => {
    const err = await readCheckpoint(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CheckpointInvalid);
    expect((err as CheckpointInvalid).kind).toBe("invalid");
    return (err as CheckpointInvalid).reason;
  };
  const saved = async (): Promise<string> => {
    const engine = track(await EmbeddedEngine.create({ config, seed: 2 }));
    const dir = await tempDir();
    await engine.saveCheckpoint(dir);
    return dir;
  };

  it("a file, and a directory without config.json", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "file.txt"), "hello");
    expect(await reasonOf(join(dir, "file.txt"))).toBe("not a directory");
    expect(await reasonOf(dir)).toBe("no config.json (not a checkpoint directory)");
  });

  it("a config.json that is not JSON or not a model config", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "config.json"), "{oops");
    expect(await reasonOf(dir)).toMatch(/^config\.json is not JSON \(/);
    await writeFile(join(dir, "config.json"), '{"x":1}');
    const reason = await reasonOf(dir);
    expect(reason).toMatch(/^config\.json: vocab: /);
    expect(reason).toContain("x");
  });

  it("missing or corrupt weights, and weights that do not fit config.json", async () => {
    const dir = await saved();
    await writeFile(join(dir, "config.json"), JSON.stringify({ ...config, d_model: 16 }));
    expect(await reasonOf(dir)).toBe("model.safetensors: weight wte has shape [261,32], config.json needs [261,16]");
    await writeFile(join(dir, "config.json"), JSON.stringify(config));
    await writeFile(join(dir, "model.safetensors"), "short");
    expect(await reasonOf(dir)).toMatch(/^model\.safetensors: invalid safetensors: /);
    await rm(join(dir, "model.safetensors"));
    expect(await reasonOf(dir)).toBe("no model.safetensors (not a checkpoint directory)");
  });

  it("a failed hot swap leaves the engine's weights and policy version as they were", async () => {
    const dir = await saved();
    // Weights fine, moments of the wrong shape: the old code assigned the weights before the optimiser failed.
    const moments = new Map([["m.wte", { shape: [2], data: new Float32Array(2) }]]);
    await writeFile(join(dir, "optimizer.safetensors"), encodeSafeTensors(moments, { step: "1" }));
    expect(await reasonOf(dir)).toBe("optimizer.safetensors: m.wte [2] does not match any weight of config.json");
    const engine = track(await EmbeddedEngine.create({ config, seed: 9 }));
    const probe = [[1, 2, 3, 4, 5]];
    const before = await engine.logprobs(probe);
    await expect(engine.loadCheckpoint(dir)).rejects.toBeInstanceOf(CheckpointInvalid);
    expect(engine.policyVersion).toBe(0);
    expect(await engine.logprobs(probe)).toEqual(before);
  });
});
