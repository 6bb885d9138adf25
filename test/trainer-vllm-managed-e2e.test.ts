/**
 * End-to-end GRPO with vLLM started by arclight (`engine.vllm.launch`) and full fine-tuning: `arclight train` starts two
 * replicas of the fake `vllm` executable (`src/gateway/testing/fake-vllm-cli.ts`, which parses `vllm serve` flags and
 * mounts the routes they turn on), waits for their `/health`, reloads every weight into both after each update over
 * `/collective_rpc`, and stops both process groups when it ends, normally or on SIGINT. Checked: the flags each replica
 * got, that every recorded model call carries the version of the weights that answered it, and that no replica process
 * (nor its forked engine core) outlives the run.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { readFakeVllmRecord, writeFakeVllmBin } from "../src/gateway/testing/fake-vllm-bin.js";
import { pollUntil } from "../src/testing/poll.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { tempDir } from "../src/testing/temp-dir.js";
import { recordedVersions } from "./support/recorded-versions.js";
import { TEST_AGENT } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const exec = promisify(execFile);
const CLI = [process.execPath, "--import", import.meta.resolve("tsx"), MAIN] as const;

/** A full fine-tune config on the tiny Qwen2 whose sampler is `replicas` fake vLLMs started by arclight. */
function writeConfig(dir: string, replicas: number, totalSteps: number): string {
  const record = join(dir, "vllm-record.jsonl");
  const inputs = Array.from({ length: 2 }, (_, i) => JSON.stringify({ prompt: `say a ${i}`, turns: 1 }));
  writeFileSync(join(dir, "train.jsonl"), `${inputs.join("\n")}\n`);
  const launch = {
    command: writeFakeVllmBin(dir),
    model: "/models/Qwen2-tiny",
    gpus: Array.from({ length: replicas }, (_, i) => String(i)),
    env: { FAKE_VLLM_RECORD: record },
    restart_backoff_seconds: 0.1,
  };
  const yaml = [
    "name: managed",
    "data: { train_path: train.jsonl }",
    "train_batch_size: 2",
    "n: 2",
    `total_steps: ${totalSteps}`,
    `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
    "aggregator: { max_prompt_length: 128, max_response_length: 96 }",
    "pause_retry_after_seconds: 0",
    `engine: { kind: torch, model: "new:qwen2-tiny", python: ${JSON.stringify(testPython())}, context_length: 256,`,
    `  sampler: vllm, vllm: { replicas: ${replicas}, launch: ${JSON.stringify(launch)} } }`,
  ].join("\n");
  writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
  return record;
}

/** Whether a process exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process a fake vLLM started: its own and its engine core's. */
function replicaPids(record: string): number[] {
  return readFakeVllmRecord(record)
    .filter((r) => r.kind === "start")
    .flatMap((r) => [r.pid as number, r.engineCorePid as number]);
}

/** The version number of a weights folder `…/weights/vN`. */
const versionOf = (path: unknown) => Number(/\/v(\d+)$/.exec(String(path))?.[1]);

describe.skipIf(skipWithoutPython())("trainer end to end with vLLM launched by arclight", () => {
  it("starts the replicas, syncs full weights into each after every update, records exact versions, stops them", async () => {
    const dir = tempDir("arclight-train-vllm-managed-");
    const record = writeConfig(dir, 2, 2);
    const { stdout } = await exec(CLI[0], [...CLI.slice(1), "train", "train.yaml"], { cwd: dir, timeout: 240_000 });
    expect(stdout).toContain("2 steps, policy version 2");

    const entries = readFakeVllmRecord(record);
    const starts = entries.filter((r) => r.kind === "start");
    expect(starts.map((r) => r.cudaVisibleDevices).sort()).toEqual(["0", "1"]);
    for (const start of starts) {
      expect(start.argv).toEqual(expect.arrayContaining(["serve", "/models/Qwen2-tiny", "--served-model-name"]));
      expect(start.argv).not.toContain("--enable-lora");
      expect(start.devMode).toBe("1");
    }
    // Each replica reloaded v0 (the starting weights), v1 and v2 from runs/managed/weights.
    const weights = join(dir, "runs", "managed", "weights");
    for (const start of starts) {
      const reloads = entries.filter((r) => r.pid === start.pid && r.kind === "admin" && r.path === "/collective_rpc");
      const loaded = reloads.filter((r) => (r.args as { method: string }).method === "reload_weights");
      expect(loaded.map((r) => r.weightsPath)).toEqual([0, 1, 2].map((v) => join(weights, `v${v}`)));
    }
    // The versions the gateway recorded are the versions of the weights that answered.
    const calls = entries.filter((r) => r.kind === "call");
    expect(calls).toHaveLength(8);
    const recorded = await recordedVersions(join(dir, "runs", "managed", "gateway.db"));
    const answered = calls.map((c) => versionOf(c.weightsPath));
    expect(recorded.sort()).toEqual(answered.sort());
    expect(answered.sort()).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    // SIGKILL to each group came before arclight exited; the kernel ends the engine cores a moment later.
    const pids = replicaPids(record);
    await pollUntil("every replica process to end", () => (pids.every((p) => !alive(p)) ? true : undefined), 5_000, 50);
  }, 300_000);

  it("SIGINT while training stops every replica's process group before arclight exits", async () => {
    const dir = tempDir("arclight-train-vllm-sigint-");
    const record = writeConfig(dir, 2, 50);
    const child = spawn(CLI[0], [...CLI.slice(1), "train", "train.yaml"], {
      cwd: dir,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(child, "exit");
    // Once both replicas reloaded the starting weights (v0), training is under way.
    await pollUntil(
      "v0 reloaded on both replicas",
      () => {
        if (child.exitCode !== null) throw new Error(`train exited early (${child.exitCode}): ${stderr}`);
        const reloads = readFakeVllmRecord(record).filter(
          (r) => r.kind === "admin" && (r.args as { method?: string }).method === "reload_weights",
        );
        return new Set(reloads.map((c) => c.pid)).size === 2 ? true : undefined;
      },
      240_000,
      200,
    );
    child.kill("SIGINT");
    const [code] = await exited;
    expect(code).toBe(130);
    const pids = replicaPids(record);
    expect(pids).toHaveLength(4);
    await pollUntil("every replica process to end", () => (pids.every((p) => !alive(p)) ? true : undefined), 5_000, 50);
  }, 360_000);
});
