import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { Engine } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/testing/scripted-engine.js";
import { readFakeVllmRecord, writeFakeVllmBin } from "../gateway/testing/fake-vllm-bin.js";
import { startTestGateway } from "../gateway/testing/serve.js";
import { pollUntil } from "../testing/poll.js";
import { tempDir } from "../testing/temp-dir.js";
import { VllmLaunchSchema } from "../trainer/config.js";
import { VllmSamplerError } from "../trainer/vllm-serving.js";
import { type VllmSampler, vllmSamplerServing } from "./managed-vllm.js";
import { startStack } from "./stack.js";

/** An engine whose checkpoint is a PEFT adapter folder (only what vLLM's loader looks for). */
const adapterWriter = {
  saveCheckpoint: async (dir: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "adapter_config.json"), "{}");
  },
} as unknown as Engine;

/** One managed fake-vLLM replica recording to `dir/record.jsonl`, restarted quickly after a crash. */
function oneReplica(dir: string, weights: "lora" | "full"): VllmSampler {
  const settings = VllmLaunchSchema.parse({
    command: writeFakeVllmBin(dir),
    restart_backoff_seconds: 0.05,
    env: { FAKE_VLLM_RECORD: join(dir, "record.jsonl") },
  });
  const launch = { settings, replicas: 1, model: "/models/base", loraRank: 8, frozenModel: null };
  return { endpoints: [], sleep: false, weights, launch };
}

/** The value after `flag` in each place it occurs in `argv`. */
const flagValues = (argv: string[], flag: string) => argv.flatMap((a, i) => (a === flag ? [argv[i + 1]] : []));

describe("managed vLLM in the stack", () => {
  it("serves frozen agents from the replicas' base weights: registered at version 0, no second engine", async () => {
    const gateway = await startTestGateway({ key: "k", model_name: "policy" });
    const dir = tempDir("arclight-managed-frozen-");
    const record = join(dir, "record.jsonl");
    const settings = VllmLaunchSchema.parse({ command: writeFakeVllmBin(dir), env: { FAKE_VLLM_RECORD: record } });
    let frozenEngines = 0;
    const stack = await startStack({
      runDir: dir,
      modelName: "policy",
      engine: async () => new ScriptedEngine(),
      gateway: { url: gateway.url, key: "k" },
      frozen: {
        modelName: "frozen",
        engine: async () => {
          frozenEngines++;
          return new ScriptedEngine();
        },
      },
      vllm: {
        endpoints: [],
        sleep: false,
        weights: "lora",
        launch: { settings, replicas: 1, model: "/models/base", loraRank: 8, frozenModel: "frozen" },
      },
      controller: false,
      logger: pino({ level: "silent" }),
    });
    try {
      const endpoint = stack.serving.endpoints[0]!;
      const frozen = await gateway.store.listModels("frozen");
      expect(frozen.map((m) => [m.endpoint, m.version])).toEqual([[endpoint, 0]]);
      expect(frozenEngines).toBe(0);
      const argv = readFakeVllmRecord(record).find((r) => r.kind === "start")!.argv as string[];
      const at = argv.indexOf("--served-model-name");
      expect(argv.slice(at, at + 3)).toEqual(["--served-model-name", "policy-base", "frozen"]);
      // The replica answers the frozen name (its base weights), as vLLM answers any --served-model-name.
      const chat = await fetch(`${endpoint}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "frozen", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
      });
      expect(chat.status).toBe(200);
    } finally {
      await stack.close();
      await gateway.close();
    }
  }, 60_000);

  it("a policy per agent: replicas hold every adapter, and one restarted after a crash starts with each", async () => {
    const dir = tempDir("arclight-managed-agents-");
    const stops: (() => Promise<void>)[] = [];
    const serving = await vllmSamplerServing(oneReplica(dir, "lora"), {
      runDir: dir,
      modelName: "policy",
      policyModels: ["policy-writer", "policy-rewriter"],
      baseAliases: ["policy", "frozen"],
      logger: pino({ level: "silent" }),
      addStop: (stop) => stops.push(stop),
    });
    try {
      const starts = () => readFakeVllmRecord(join(dir, "record.jsonl")).filter((r) => r.kind === "start");
      const [first] = starts();
      expect(flagValues(first!.argv as string[], "--max-loras")).toEqual(["2"]);
      // The base weights answer the run's model name and the frozen model (unnamed and frozen agents, version 0).
      const at = (first!.argv as string[]).indexOf("--served-model-name");
      expect((first!.argv as string[]).slice(at, at + 4)).toEqual([
        "--served-model-name",
        "policy-base",
        "policy",
        "frozen",
      ]);
      const policies = [
        { modelName: "policy-writer", engine: adapterWriter },
        { modelName: "policy-rewriter", engine: adapterWriter },
      ];
      await serving.publish(policies, 3);
      process.kill(first!.pid as number, "SIGKILL");
      const restarted = await pollUntil("the restart", () => starts()[1], 30_000, 50);
      const adapters = join(dir, "adapters", "v3");
      expect(flagValues(restarted.argv as string[], "--lora-modules")).toEqual([
        `policy-writer=${join(adapters, "policy-writer")}`,
        `policy-rewriter=${join(adapters, "policy-rewriter")}`,
      ]);
      // The restarted replica answers both names from its start (vLLM serves `--lora-modules` by name), and the base.
      for (const model of ["policy-writer", "policy-rewriter", "policy"]) {
        const chat = await fetch(`${serving.endpoints[0]}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
        });
        expect(chat.status).toBe(200);
      }
    } finally {
      for (const stop of stops.reverse()) await stop();
    }
  }, 60_000);

  it("a policy per agent with full weights is refused before any replica starts", async () => {
    const dir = tempDir("arclight-managed-agents-full-");
    const started = vllmSamplerServing(oneReplica(dir, "full"), {
      runDir: dir,
      modelName: "policy",
      policyModels: ["policy-writer", "policy-rewriter"],
      logger: pino({ level: "silent" }),
      addStop: () => {},
    });
    await expect(started).rejects.toBeInstanceOf(VllmSamplerError);
    await expect(started).rejects.toThrow("needs LoRA adapters on one base");
    expect(readFakeVllmRecord(join(dir, "record.jsonl"))).toEqual([]);
  });
});
