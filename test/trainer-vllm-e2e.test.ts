/**
 * End-to-end GRPO with vLLM as the sampler: `arclight train` with `engine: {kind: torch, lora, sampler: vllm,
 * vllm_sleep: true}` trains on a torch worker while the rollouts' model calls go to a fake vLLM that keeps vLLM's
 * model registry (runtime LoRA routes, sleep routes, 404 for an unknown model). Checked: the adapter of every version
 * is loaded in place under the policy name, vLLM sleeps around every update and is awake for every call, and every
 * recorded model call carries the version of the adapter that answered it.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { tempDir } from "../src/testing/temp-dir.js";
import { recordedVersions } from "./support/recorded-versions.js";
import { TEST_AGENT } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const exec = promisify(execFile);

/**
 * A train config on the tiny Qwen2 with LoRA; `engine` adds keys to the engine section, `input` to every input, and
 * `more` lines to the YAML.
 */
function writeConfig(dir: string, engine: string, input: object = { turns: 1 }, more: string[] = []): void {
  const inputs = Array.from({ length: 2 }, (_, i) => JSON.stringify({ prompt: `say a ${i}`, ...input }));
  writeFileSync(join(dir, "train.jsonl"), `${inputs.join("\n")}\n`);
  const yaml = [
    "name: vllm",
    "data: { train_path: train.jsonl }",
    "train_batch_size: 2",
    "n: 2",
    "total_steps: 2",
    `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
    "aggregator: { max_prompt_length: 128, max_response_length: 96 }",
    "pause_retry_after_seconds: 0",
    `engine: { kind: torch, model: "new:qwen2-tiny", python: ${JSON.stringify(testPython())}, context_length: 256${engine} }`,
    ...more,
  ].join("\n");
  writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
}

const train = (dir: string, args: string[] = []) =>
  exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml", ...args], {
    cwd: dir,
    timeout: 240_000,
  });

/** The version number of an adapter folder `…/adapters/vN`. */
const versionOf = (path: string | null) => Number(/\/v(\d+)$/.exec(path ?? "")?.[1]);

describe.skipIf(skipWithoutPython())("trainer end to end with vLLM as the sampler", () => {
  let fake: FakeVllm | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it("loads each version's adapter into vLLM, sleeps it around updates, and records exact versions", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base", vocabSize: 512 });
    const dir = tempDir("arclight-train-vllm-");
    const lora = ", lora: { rank: 4 }";
    writeConfig(dir, `${lora}, sampler: vllm, vllm_endpoints: [${JSON.stringify(fake.url)}], vllm_sleep: true`);
    const { stdout } = await train(dir);
    expect(stdout).toContain("2 steps, policy version 2");

    const adapters = join(dir, "runs", "vllm", "adapters");
    const admin = fake.admin!;
    expect(admin.calls.map((c) => c.path)).toEqual([
      "/v1/load_lora_adapter",
      ...["/sleep", "/wake_up", "/v1/load_lora_adapter"],
      ...["/sleep", "/wake_up", "/v1/load_lora_adapter"],
    ]);
    const loads = admin.calls.filter((c) => c.path === "/v1/load_lora_adapter");
    expect(loads.map((c) => c.args)).toEqual(
      [0, 1, 2].map((v) => ({ lora_name: "policy", lora_path: join(adapters, `v${v}`), load_inplace: true })),
    );
    expect(admin.calls.every((c) => c.status === 200)).toBe(true);

    // Every model call reached vLLM awake and named the loaded adapter.
    const calls = fake.received.filter((c) => c.path === "/v1/chat/completions");
    expect(calls).toHaveLength(8);
    expect(calls.filter((c) => c.sleeping)).toEqual([]);
    expect(calls.every((c) => c.body.model === "policy" && c.adapterPath !== null)).toBe(true);

    // The versions the gateway recorded are the versions of the adapters that answered.
    const recorded = await recordedVersions(join(dir, "runs", "vllm", "gateway.db"));
    const answered = calls.map((c) => versionOf(c.adapterPath));
    expect(recorded.sort()).toEqual(answered.sort());
    expect(answered.sort()).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  }, 300_000);

  it("a policy per agent: each agent's adapter is loaded under its own name every version and answers its calls", async () => {
    fake = await FakeVllm.start({}, { servedModel: "policy", vocabSize: 512 });
    const dir = tempDir("arclight-train-vllm-per-agent-");
    const engine = `, lora: { rank: 4 }, sampler: vllm, vllm_endpoints: [${JSON.stringify(fake.url)}]`;
    const agents = "agents: { train: [writer, rewriter], policy: per_agent }";
    writeConfig(dir, engine, { agents: ["writer", "rewriter"], max_tokens: 4 }, [agents]);
    const { stdout } = await train(dir);
    expect(stdout).toContain("2 steps, policy version 2");

    // Every version loads both adapters, each under its agent's model name, from its own folder.
    const adapters = join(dir, "runs", "vllm", "adapters");
    const loads = fake.admin!.calls.filter((c) => c.path === "/v1/load_lora_adapter");
    const names = ["policy-writer", "policy-rewriter"];
    expect(loads.map((c) => c.args)).toEqual(
      [0, 1, 2].flatMap((v) =>
        names.map((name) => ({ lora_name: name, lora_path: join(adapters, `v${v}`, name), load_inplace: true })),
      ),
    );
    // The writer's turn (the first of each rollout) reached its adapter, the rewriter's its own; the gateway recorded
    // the version of the adapter that answered.
    const calls = fake.received.filter((c) => c.path === "/v1/chat/completions");
    expect(calls).toHaveLength(16);
    expect(calls.filter((c) => c.body.model === "policy-writer")).toHaveLength(8);
    expect(calls.every((c) => c.adapterPath?.endsWith(`/${String(c.body.model)}`))).toBe(true);
    const recorded = await recordedVersions(join(dir, "runs", "vllm", "gateway.db"));
    const answered = calls.map((c) => versionOf(dirname(c.adapterPath ?? "")));
    expect(recorded.sort()).toEqual(answered.sort());
  }, 300_000);

  it("a full fine-tune with an unreachable vLLM stops train with one line naming the reload route", async () => {
    const dir = tempDir("arclight-train-vllm-full-down-");
    writeConfig(dir, ', sampler: vllm, vllm_endpoints: ["http://127.0.0.1:9/v1"]');
    const failed = await train(dir).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("vLLM http://127.0.0.1:9/collective_rpc: unreachable"),
    });
    // One line from arclight (the torch worker may print its own progress bar and warnings above it).
    const lines = (failed as { stderr: string }).stderr.trim().split("\n");
    expect(lines.filter((line) => line.startsWith("arclight"))).toHaveLength(1);
  }, 180_000);

  it("an unreachable vLLM stops train with one line naming its URL", async () => {
    const dir = tempDir("arclight-train-vllm-down-");
    writeConfig(dir, ", lora: { rank: 4 }");
    const failed = await train(dir, ["--sampler", "vllm", "--vllm-endpoint", "http://127.0.0.1:9/v1"]).catch(
      (err: { code: number; stderr: string }) => err,
    );
    const message = "vLLM http://127.0.0.1:9/v1/load_lora_adapter: unreachable";
    expect(failed).toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    // One line from arclight (the torch worker may print its own warnings above it).
    const lines = (failed as { stderr: string }).stderr.trim().split("\n");
    expect(lines.filter((line) => line.startsWith("arclight"))).toHaveLength(1);
  }, 180_000);
});
