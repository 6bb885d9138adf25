import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../testing/temp-dir.js";
import { FakeVllm } from "./fake-vllm.js";
import type { FakeVllmServerFlags } from "./fake-vllm-admin.js";

/** Server flags of a `vllm serve` with everything arclight asks for, then `changes`. */
const flags = (changes: Partial<FakeVllmServerFlags> = {}): FakeVllmServerFlags => ({
  runtimeLora: true,
  maxLoraRank: 16,
  devMode: true,
  sleepMode: true,
  model: null,
  loraModules: [],
  ...changes,
});

/** An adapter folder as PEFT writes it (what vLLM's loader looks for). */
function adapterDir(): string {
  const dir = tempDir("arclight-fake-adapter-");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "adapter_config.json"), "{}");
  return dir;
}

describe("fake vLLM model registry (vLLM's answers)", () => {
  let fake: FakeVllm | undefined;
  afterEach(async () => {
    await fake?.close();
  });
  const root = () => fake!.url.replace(/\/v1$/, "");
  const post = (path: string, body?: unknown) =>
    fetch(`${root()}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it("load_lora_adapter answers 200 in plain text, and the adapter then serves completions", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const loaded = await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: adapterDir() });
    expect(loaded.status).toBe(200);
    expect(loaded.headers.get("content-type")).toBeNull();
    expect(await loaded.text()).toBe("Success: LoRA adapter 'policy' added successfully.");
    const chat = await post("/v1/chat/completions", { model: "policy", messages: [{ role: "user", content: "x" }] });
    expect(chat.status).toBe(200);
  });

  it("loading a name twice without load_inplace is vLLM's 400 InvalidUserInput", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const dir = adapterDir();
    await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: dir });
    const again = await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: dir });
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({
      error: {
        message:
          "The lora adapter 'policy' has already been loaded. If you want to load the adapter in place, set " +
          "'load_inplace' to True.",
        type: "InvalidUserInput",
        param: null,
        code: 400,
      },
    });
    const inplace = await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: dir, load_inplace: true });
    expect(inplace.status).toBe(200);
  });

  it("a folder without an adapter is vLLM's 404 'No adapter found'", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const dir = tempDir("arclight-empty-");
    const answer = await post("/v1/load_lora_adapter", { lora_name: "p", lora_path: dir });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({
      error: { message: `Loading lora p failed: No adapter found for ${dir}`, type: "NotFoundError", code: 404 },
    });
  });

  it("unload answers 200, then 404 'cannot be found' for the same name", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: adapterDir() });
    const first = await post("/v1/unload_lora_adapter", { lora_name: "policy" });
    expect(await first.text()).toBe("Success: LoRA adapter 'policy' removed successfully.");
    const second = await post("/v1/unload_lora_adapter", { lora_name: "policy" });
    expect(second.status).toBe(404);
    expect(await second.json()).toEqual({
      error: { message: "The lora adapter 'policy' cannot be found.", type: "NotFoundError", param: null, code: 404 },
    });
  });

  it("an unknown model is vLLM's 404 with param model", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const chat = await post("/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "x" }] });
    expect(chat.status).toBe(404);
    expect(await chat.json()).toEqual({
      error: { message: "The model `x` does not exist.", type: "NotFoundError", param: "model", code: 404 },
    });
  });

  it("sleep and wake_up answer 200 with an empty body; is_sleeping reports the state", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const slept = await post("/sleep?level=1");
    expect([slept.status, await slept.text()]).toEqual([200, ""]);
    expect(await (await fetch(`${root()}/is_sleeping`)).json()).toEqual({ is_sleeping: true });
    const woke = await post("/wake_up");
    expect([woke.status, await woke.text()]).toEqual([200, ""]);
    expect(await (await fetch(`${root()}/is_sleeping`)).json()).toEqual({ is_sleeping: false });
  });

  it("GET /health answers 200 with an empty body", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base" });
    const health = await fetch(`${root()}/health`);
    expect([health.status, await health.text()]).toEqual([200, ""]);
  });

  it("without VLLM_SERVER_DEV_MODE the dev routes are FastAPI's 404 Not Found", async () => {
    fake = await FakeVllm.start({}, { servedModel: "base", serverFlags: flags({ devMode: false }) });
    for (const path of ["/sleep", "/wake_up", "/collective_rpc", "/reset_prefix_cache"]) {
      const answer = await post(path, {});
      expect([answer.status, await answer.json()]).toEqual([404, { detail: "Not Found" }]);
    }
  });

  it("update_config then reload_weights swaps the served weights; the results list has one null per worker", async () => {
    const folder = tempDir("arclight-fake-full-");
    writeFileSync(join(folder, "config.json"), "{}");
    writeFileSync(join(folder, "model.safetensors"), "");
    fake = await FakeVllm.start({}, { servedModel: "policy", serverFlags: flags({ model: "/models/base" }) });
    const update = await post("/collective_rpc", {
      method: "update_config",
      args: [{ model_config: { model: folder } }],
    });
    expect([update.status, await update.json()]).toEqual([200, { results: [null] }]);
    expect(fake.admin!.weightsPath).toBe("/models/base");
    const reload = await post("/collective_rpc", { method: "reload_weights" });
    expect([reload.status, await reload.json()]).toEqual([200, { results: [null] }]);
    expect(fake.admin!.weightsPath).toBe(folder);
    const missing = await post("/collective_rpc", {});
    expect([missing.status, await missing.json()]).toEqual([400, { detail: "Missing 'method' in request body" }]);
  });

  it("an adapter of a rank above --max-lora-rank is refused; --lora-modules are loaded at start", async () => {
    const dir = adapterDir();
    writeFileSync(join(dir, "adapter_config.json"), JSON.stringify({ r: 32 }));
    const loraModules = [{ name: "writer", path: adapterDir() }];
    fake = await FakeVllm.start({}, { servedModel: "base", serverFlags: flags({ maxLoraRank: 16, loraModules }) });
    const loaded = await post("/v1/load_lora_adapter", { lora_name: "policy", lora_path: dir });
    expect(loaded.status).toBe(400);
    expect(((await loaded.json()) as { error: { message: string } }).error.message).toBe(
      "LoRA rank 32 is greater than max_lora_rank 16.",
    );
    const chat = await post("/v1/chat/completions", { model: "writer", messages: [{ role: "user", content: "x" }] });
    expect(chat.status).toBe(200);
  });
});
