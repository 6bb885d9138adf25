import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ScriptedEngine } from "../engine/testing/scripted-engine.js";
import { readFakeVllmRecord, writeFakeVllmBin } from "../gateway/testing/fake-vllm-bin.js";
import { startTestGateway } from "../gateway/testing/serve.js";
import { tempDir } from "../testing/temp-dir.js";
import { VllmLaunchSchema } from "../trainer/config.js";
import { startStack } from "./stack.js";

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
});
