/**
 * @module The remote engine against real torch worker processes (the tiny random Qwen2): the Engine contract suite,
 * a worker killed during a train step, checkpoint errors, and a missing Python package.
 */
import { describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../../testing/python.js";
import { CheckpointInvalid } from "../checkpoint-error.js";
import { runEngineContract } from "../engine.contract.js";
import type { TrainRow } from "../engine.js";
import { RemoteEngine } from "./remote-engine.js";
import { TorchWorkerError } from "./worker-client.js";
import { TorchPackageMissing } from "./worker-process.js";

const skip = skipWithoutPython();

/** A fresh worker on the bundled tiny Qwen2 (vocab 512, context 64). */
function tinyWorker(): Promise<RemoteEngine> {
  return RemoteEngine.start({ python: testPython()!, model: "new:qwen2-tiny", contextLength: 64, threads: 1 });
}

describe.skipIf(skip)("remote engine on a torch worker", () => {
  runEngineContract("torch worker (remote)", tinyWorker);

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
});
