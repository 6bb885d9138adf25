import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { parseTrainerConfig } from "./config.js";
import { proxyRegistrationOf, registerEndpoints } from "./gateway-io.js";

/** The repository's real Hugging Face tokenizer folder (byte-level BPE + Qwen2-style chat template). */
const TOKENIZER = resolve(fileURLToPath(import.meta.url), "../../../python/arclight_torch/assets/tokenizer");

let gateway: TestGateway | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  await client?.close();
  await gateway?.close();
  gateway = undefined;
  client = undefined;
});

describe("trainer proxy section", () => {
  it("registers passthrough as AGL's shape and tito with its tokenizer folder and tool parser", async () => {
    gateway = await startTestGateway();
    client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
    const plain = parseTrainerConfig({});
    expect(proxyRegistrationOf(plain)).toBeUndefined();
    await registerEndpoints(client, "plain", ["http://127.0.0.1:9/v1"], 3, proxyRegistrationOf(plain));
    const tito = parseTrainerConfig({ proxy: { mode: "tito", tokenizer: TOKENIZER, reasoning_parser: "qwen3" } });
    await registerEndpoints(client, "policy", ["http://127.0.0.1:9/v1"], 3, proxyRegistrationOf(tito));
    const stored = (await (
      await fetch(`${gateway.url}/api/models`, { headers: { authorization: "Bearer test-key" } })
    ).json()) as Record<string, unknown>[];
    // passthrough keeps Agent Lightning's shape: no mode, tokenizer or tool_parser key.
    expect(Object.keys(stored.find((m) => m.model === "plain") ?? {}).sort()).toEqual(["endpoint", "model", "version"]);
    expect(stored.find((m) => m.model === "policy")).toMatchObject({
      endpoint: "http://127.0.0.1:9/v1",
      version: 3,
      mode: "tito",
      tokenizer: TOKENIZER,
      tool_parser: "hermes",
      reasoning_parser: "qwen3",
    });
    // A later version re-registers with the same settings (the trainer does so at every update).
    await registerEndpoints(client, "policy", ["http://127.0.0.1:9/v1"], 4, proxyRegistrationOf(tito));
    const again = (await (
      await fetch(`${gateway.url}/api/models`, { headers: { authorization: "Bearer test-key" } })
    ).json()) as Record<string, unknown>[];
    expect(again.find((m) => m.model === "policy")).toMatchObject({ version: 4, mode: "tito", tokenizer: TOKENIZER });
  });

  it("is refused by the gateway when the tokenizer folder cannot be read", async () => {
    gateway = await startTestGateway();
    client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
    const tito = parseTrainerConfig({ proxy: { mode: "tito", tokenizer: "/nonexistent/tokenizer" } });
    await expect(
      registerEndpoints(client, "policy", ["http://127.0.0.1:9/v1"], 0, proxyRegistrationOf(tito)),
    ).rejects.toThrow(/tito tokenizer: cannot read/);
  });

  it("needs a tokenizer for tito: proxy.tokenizer, or a torch engine's local model folder", () => {
    expect(() => parseTrainerConfig({ proxy: { mode: "tito" } })).toThrow(/proxy\.tokenizer/);
    expect(() =>
      parseTrainerConfig({ proxy: { mode: "tito" }, engine: { kind: "torch", model: "new:qwen2-tiny" } }),
    ).toThrow(/proxy\.mode tito needs a Hugging Face tokenizer folder/);
    const folder = parseTrainerConfig({ proxy: { mode: "tito" }, engine: { kind: "torch", model: "/models/qwen" } });
    expect(proxyRegistrationOf(folder)).toEqual({
      mode: "tito",
      tokenizer: "/models/qwen",
      tool_parser: "hermes",
      reasoning_parser: "none",
    });
    expect(() => parseTrainerConfig({ proxy: { mode: "both" } })).toThrow();
    expect(() => parseTrainerConfig({ proxy: { mode: "tito", tokenizer: "/t", reasoning_parser: "r1" } })).toThrow(
      /reasoning_parser/,
    );
  });
});
