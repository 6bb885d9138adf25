/**
 * @module The remote engine against real torch worker processes (the tiny random Qwen2): the Engine contract suite
 * on one rank and on two (torchrun, FSDP2 over gloo), a worker or a rank killed during a train step, checkpoint
 * errors, and a missing Python package.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { skipWithoutPython, testPython } from "../../testing/python.js";
import { CheckpointInvalid } from "../checkpoint-error.js";
import { runEngineContract } from "../engine.contract.js";
import type { TrainRow } from "../engine.js";
import { RemoteEngine } from "./remote-engine.js";
import { TorchWorkerError } from "./worker-client.js";
import { TorchPackageMissing } from "./worker-process.js";

const skip = skipWithoutPython();
// Two ranks start in 20–40 s on a 2-core CI machine (two Pythons importing torch) and in over 2 minutes under a
// load average of 30; the contract's checkpoint case starts two engines.
vi.setConfig({ testTimeout: 600_000 });

/** A fresh worker on the bundled tiny Qwen2 (vocab 512, context 64). */
function tinyWorker(): Promise<RemoteEngine> {
  return RemoteEngine.start({ python: testPython()!, model: "new:qwen2-tiny", contextLength: 64, threads: 1 });
}

/** The same model on two ranks: `arclight-torch serve --nproc-per-node 2` (rank 0 serves, both compute). */
function twoRankWorker(): Promise<RemoteEngine> {
  return RemoteEngine.start({
    python: testPython()!,
    model: "new:qwen2-tiny",
    contextLength: 64,
    threads: 1,
    ranks: { nprocPerNode: 2 },
    startTimeoutMs: 300_000,
  });
}

/** Pid of rank `rank` among the launcher's children (by its RANK environment variable). */
function rankPid(launcher: number, rank: number): number {
  const children = execFileSync("pgrep", ["-P", String(launcher)], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  const pid = children.find((p) => readFileSync(`/proc/${p}/environ`, "latin1").split("\0").includes(`RANK=${rank}`));
  if (pid === undefined) throw new Error(`no rank ${rank} under pid ${launcher}`);
  return Number(pid);
}

const longStep: TrainRow[] = Array.from({ length: 256 }, () => ({
  tokenIds: Array.from({ length: 64 }, (_, i) => (i * 7) % 500),
  lossMask: Array.from({ length: 64 }, (_, i) => (i < 8 ? 0 : 1)),
  advantages: Array.from({ length: 64 }, () => 1),
}));

describe.skipIf(skip)("remote engine on a torch worker", () => {
  runEngineContract("torch worker (remote)", tinyWorker);
  runEngineContract("torch worker, 2 ranks (torchrun, FSDP2)", twoRankWorker);

  it("a rank killed during a train step fails the step with a TorchWorkerError naming the rank", async () => {
    const engine = await twoRankWorker();
    try {
      expect(engine.info.world_size).toBe(2);
      const rank1 = rankPid(engine.workerPid!, 1);
      const step = engine.trainStep(
        longStep,
        { kind: "sft", aggregation: "token-mean" },
        { learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 },
      );
      setTimeout(() => process.kill(rank1, "SIGKILL"), 1_000);
      const error = await step.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TorchWorkerError);
      expect((error as Error).message).toMatch(
        new RegExp(`exited with code 1 \\(rank 1 failed: pid ${rank1} ended with SIGKILL; .*\\) during /v1/train_step`),
      );
      // Every rank is gone with the launcher.
      expect(() => process.kill(rank1, 0)).toThrow();
      expect(() => execFileSync("pgrep", ["-P", String(engine.workerPid)])).toThrow();
    } finally {
      await engine.close();
    }
  });

  it("a worker killed during a train step fails the step with a TorchWorkerError naming the exit", async () => {
    const engine = await tinyWorker();
    try {
      const row: TrainRow = {
        tokenIds: Array.from({ length: 64 }, (_, i) => (i * 7) % 500),
        lossMask: Array.from({ length: 64 }, (_, i) => (i < 8 ? 0 : 1)),
        advantages: Array.from({ length: 64 }, () => 1),
      };
      const step = engine.trainStep(
        Array.from({ length: 256 }, () => row),
        { kind: "sft", aggregation: "token-mean" },
        { learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 },
      );
      // Kill once the request is in flight: the worker is then inside the step (256 micro-batches take seconds).
      setTimeout(() => process.kill(engine.workerPid!, "SIGKILL"), 300);
      await expect(step).rejects.toThrow(TorchWorkerError);
      await expect(step).rejects.toThrow(/exited with SIGKILL during \/v1\/train_step/);
    } finally {
      await engine.close();
    }
  });

  it("loading a missing checkpoint is CheckpointInvalid missing", async () => {
    const engine = await tinyWorker();
    try {
      const error = await engine.loadCheckpoint("/nonexistent/arclight-ckpt").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointInvalid);
      expect((error as CheckpointInvalid).kind).toBe("missing");
      expect(engine.policyVersion).toBe(0);
    } finally {
      await engine.close();
    }
  });

  it("a Python without the arclight-torch package fails with one line naming the install command", async () => {
    const error = await RemoteEngine.start({ python: "/usr/bin/python3", model: "new:qwen2-tiny" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TorchPackageMissing);
    expect((error as Error).message).toMatch(/-m pip install \.\/python/);
    expect((error as Error).message).not.toContain("\n");
  });

  it("adapter engines of one worker train apart; the base never moves; an unknown adapter is refused", async () => {
    const main = await RemoteEngine.start({
      python: testPython()!,
      model: "new:qwen2-tiny",
      contextLength: 64,
      threads: 1,
      lora: { rank: 4 },
      adapters: ["writer", "rewriter"],
    });
    const dir = mkdtempSync(join(tmpdir(), "arclight-adapters-"));
    try {
      const [writer, rewriter, base] = ["writer", "rewriter", "base"].map((name) => main.adapterEngine(name));
      const seq = [[5, 9, 17, 33, 65, 129, 257, 3]];
      const start = await base!.logprobs(seq);
      expect(await writer!.logprobs(seq)).toEqual(start); // B = 0: an untrained adapter is the base function
      const row = { tokenIds: seq[0]!, lossMask: [0, 0, 0, 1, 1, 1, 1, 1], advantages: [0, 0, 0, 1, 1, 1, 1, 1] };
      const loss = { kind: "ppo", clipLow: 0.2, clipHigh: 0.2, klCoef: 0, aggregation: "token-mean" } as const;
      const optimizer = { learningRate: 0.05, weightDecay: 0, maxGradNorm: 0, microBatchSize: 8 };
      await writer!.trainStep([row], loss, optimizer);
      expect([writer!.policyVersion, rewriter!.policyVersion, base!.policyVersion]).toEqual([1, 0, 0]);
      const trained = await writer!.logprobs(seq);
      expect(trained).not.toEqual(start);
      expect(await rewriter!.logprobs(seq)).toEqual(start);
      expect(await base!.logprobs(seq)).toEqual(start);
      // The writer's checkpoint loads into the rewriter; an adapter's engine closes nothing.
      await writer!.saveCheckpoint(dir);
      await rewriter!.loadCheckpoint(dir);
      writer!.dispose();
      expect(await rewriter!.logprobs(seq)).toEqual(trained);
      await expect(base!.trainStep([row], loss, optimizer)).rejects.toThrow(/adapter/);
      expect(() => main.adapterEngine("checker")).toThrow('has no adapter "checker" (its adapters: writer, rewriter)');
    } finally {
      await main.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
