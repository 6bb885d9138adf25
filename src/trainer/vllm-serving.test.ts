import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Engine } from "../engine/engine.js";
import { FakeVllm } from "../gateway/testing/fake-vllm.js";
import { tempDir } from "../testing/temp-dir.js";
import { VllmSamplerError, vllmServing } from "./vllm-serving.js";

/** An engine whose checkpoint is a PEFT adapter folder (only what vLLM's loader looks for). */
const adapterWriter = {
  saveCheckpoint: async (dir: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "adapter_config.json"), "{}");
  },
} as unknown as Engine;

/** An engine whose checkpoint is a full Hugging Face folder (config.json + safetensors), as the torch worker saves. */
const fullWriter = {
  saveCheckpoint: async (dir: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), "{}");
    writeFileSync(join(dir, "model.safetensors"), "");
  },
} as unknown as Engine;

/** The one policy of a run, served as `policy`. */
const policy = (engine: Engine) => [{ modelName: "policy", engine }];

/** A collocated serving (asleep around updates) on one vLLM, writing adapters to a temp dir. */
const collocated = (url: string) => vllmServing({ endpoints: [url], adaptersDir: tempDir("a-"), sleep: true });

describe("vLLM serving", () => {
  const fakes: FakeVllm[] = [];
  afterEach(async () => {
    for (const fake of fakes.splice(0)) await fake.close();
  });
  const start = async (servedModel?: string) => {
    const fake = await FakeVllm.start({}, servedModel === undefined ? {} : { servedModel });
    fakes.push(fake);
    return fake;
  };

  it("publish loads the adapter in place under the policy name and drops the previous version's folder", async () => {
    const fake = await start("base");
    const dir = tempDir("arclight-vllm-serving-");
    const serving = vllmServing({ endpoints: [fake.url], adaptersDir: dir, sleep: false });
    await serving.publish(policy(adapterWriter), 0);
    await serving.publish(policy(adapterWriter), 1);
    expect(fake.admin!.calls.map((c) => [c.path, c.args, c.status])).toEqual([
      ["/v1/load_lora_adapter", { lora_name: "policy", lora_path: join(dir, "v0"), load_inplace: true }, 200],
      ["/v1/load_lora_adapter", { lora_name: "policy", lora_path: join(dir, "v1"), load_inplace: true }, 200],
    ]);
    expect(fake.admin!.adapters.get("policy")).toBe(join(dir, "v1"));
    expect(existsSync(join(dir, "v0"))).toBe(false);
  });

  it("a vLLM without runtime LoRA updating is a VllmSamplerError naming the setting", async () => {
    const fake = await start(); // no model registry: the LoRA routes answer FastAPI's 404 {"detail": "Not Found"}
    const serving = vllmServing({ endpoints: [fake.url], adaptersDir: tempDir("a-"), sleep: false });
    const failed = serving.publish(policy(adapterWriter), 0);
    await expect(failed).rejects.toBeInstanceOf(VllmSamplerError);
    await expect(failed).rejects.toThrow(/answered 404.*VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/);
  });

  it("an unreachable vLLM is a VllmSamplerError naming its URL", async () => {
    const fake = await start("base");
    const url = fake.url;
    await fake.close();
    fakes.length = 0;
    const serving = vllmServing({ endpoints: [url], adaptersDir: tempDir("a-"), sleep: false });
    await expect(serving.publish(policy(adapterWriter), 0)).rejects.toThrow(
      `vLLM ${url}/load_lora_adapter: unreachable`,
    );
  });

  it("collocated: sleeps before the update and wakes before loading the new adapter", async () => {
    const fake = await start("base");
    const serving = collocated(fake.url);
    let sleepingDuringUpdate = false;
    await serving.aroundUpdate!(async () => {
      sleepingDuringUpdate = fake.admin!.sleeping;
      await serving.publish(policy(adapterWriter), 1);
    });
    expect(sleepingDuringUpdate).toBe(true);
    expect(fake.admin!.calls.map((c) => c.path)).toEqual(["/sleep", "/wake_up", "/v1/load_lora_adapter"]);
    expect(fake.admin!.calls[0]!.args).toEqual({ level: 1 });
  });

  it("collocated: a failed update still wakes vLLM, and the update's error propagates", async () => {
    const fake = await start("base");
    const serving = collocated(fake.url);
    const failed = serving.aroundUpdate!(async () => {
      throw new Error("train step failed");
    });
    await expect(failed).rejects.toThrow("train step failed");
    expect(fake.admin!.sleeping).toBe(false);
    expect(fake.admin!.calls.map((c) => c.path)).toEqual(["/sleep", "/wake_up"]);
  });

  it("full weights: publish reloads every weight from the saved folder and resets the prefix cache", async () => {
    const fake = await start("policy");
    const dir = tempDir("arclight-vllm-full-");
    const serving = vllmServing({
      endpoints: [fake.url],
      adaptersDir: dir,
      sleep: false,
      weights: "full",
    });
    await serving.publish(policy(fullWriter), 1);
    expect(fake.admin!.calls.map((c) => [c.path, c.args, c.status])).toEqual([
      ["/collective_rpc", { method: "update_config", args: [{ model_config: { model: join(dir, "v1") } }] }, 200],
      ["/collective_rpc", { method: "reload_weights" }, 200],
      ["/reset_prefix_cache", {}, 200],
    ]);
    expect(fake.admin!.weightsPath).toBe(join(dir, "v1"));
  });

  it("full weights: a folder vLLM cannot load is a VllmSamplerError with vLLM's message", async () => {
    const fake = await start("policy");
    const serving = vllmServing({
      endpoints: [fake.url],
      adaptersDir: tempDir("a-"),
      sleep: false,
      weights: "full",
    });
    const failed = serving.publish(policy(adapterWriter), 1); // an adapter folder: no full weights
    await expect(failed).rejects.toThrow(/collective_rpc answered 500: Cannot find any model weights/);
  });

  it("a server that cannot be reached mid-publish is waited for and loaded again", async () => {
    const fake = await start("base");
    const url = fake.url;
    let readyCalls = 0;
    let restarted: FakeVllm | null = null;
    const serving = vllmServing({
      endpoints: [url],
      adaptersDir: tempDir("a-"),
      sleep: false,
      // The first ready() (before loading) finds the server up; then it dies, and the second ready() restarts it.
      ready: async () => {
        readyCalls++;
        if (readyCalls === 1) await fake.close();
        if (readyCalls === 2) {
          restarted = await FakeVllm.start({}, { servedModel: "base", port: Number(new URL(url).port) });
          fakes.push(restarted);
        }
      },
    });
    fakes.length = 0;
    await serving.publish(policy(adapterWriter), 2);
    expect(readyCalls).toBe(2);
    expect(restarted!.admin!.adapters.get("policy")).toMatch(/\/v2$/);
  });

  it("a policy per agent: each adapter is saved in vN/NAME and loaded under its name into every server", async () => {
    const [first, second] = [await start("base"), await start("base")];
    const dir = tempDir("arclight-vllm-agents-");
    const versions: unknown[] = [];
    const serving = vllmServing({
      endpoints: [first.url, second.url],
      adaptersDir: dir,
      sleep: false,
      onPublish: (version) => versions.push(version),
    });
    const policies = [
      { modelName: "policy-writer", engine: adapterWriter },
      { modelName: "policy-rewriter", engine: adapterWriter },
    ];
    await serving.publish(policies, 0);
    await serving.publish(policies, 1);
    const v1 = [
      { name: "policy-writer", path: join(dir, "v1", "policy-writer") },
      { name: "policy-rewriter", path: join(dir, "v1", "policy-rewriter") },
    ];
    expect(versions.at(-1)).toEqual({ adapters: v1 });
    for (const fake of [first, second]) {
      expect(Object.fromEntries(fake.admin!.adapters)).toEqual({
        "policy-writer": v1[0]!.path,
        "policy-rewriter": v1[1]!.path,
      });
      const loads = fake.admin!.calls.map((c) => [c.args.lora_name, c.args.lora_path, c.args.load_inplace, c.status]);
      expect(loads.slice(2)).toEqual(v1.map((a) => [a.name, a.path, true, 200]));
    }
    expect(existsSync(join(v1[0]!.path, "adapter_config.json"))).toBe(true);
    expect(existsSync(join(dir, "v0"))).toBe(false);
    // Each name now answers a completion, as vLLM answers a loaded adapter's name.
    const chat = await fetch(`${second.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "policy-rewriter", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    expect(chat.status).toBe(200);
  });

  it("a policy per agent with full weights is refused before anything is saved", async () => {
    const fake = await start("policy");
    const dir = tempDir("arclight-vllm-full-agents-");
    const serving = vllmServing({ endpoints: [fake.url], adaptersDir: dir, sleep: false, weights: "full" });
    const policies = [
      { modelName: "policy-writer", engine: fullWriter },
      { modelName: "policy-rewriter", engine: fullWriter },
    ];
    const failed = serving.publish(policies, 1);
    await expect(failed).rejects.toBeInstanceOf(VllmSamplerError);
    await expect(failed).rejects.toThrow(/policy-writer, policy-rewriter\) needs LoRA adapters on one base/);
    expect(existsSync(join(dir, "v1"))).toBe(false);
    expect(fake.admin!.calls).toEqual([]);
  });

  it("policy names that repeat or cannot name a folder are refused", async () => {
    const fake = await start("base");
    const serving = vllmServing({ endpoints: [fake.url], adaptersDir: tempDir("a-"), sleep: false });
    const twice = [
      { modelName: "policy-writer", engine: adapterWriter },
      { modelName: "policy-writer", engine: adapterWriter },
    ];
    await expect(serving.publish(twice, 1)).rejects.toThrow("policy model name policy-writer is given twice");
    const nested = [
      { modelName: "policy-writer", engine: adapterWriter },
      { modelName: "../escape", engine: adapterWriter },
    ];
    await expect(serving.publish(nested, 1)).rejects.toThrow('policy model name "../escape" cannot name');
    expect(fake.admin!.calls).toEqual([]);
  });
});
