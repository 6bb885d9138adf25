/**
 * @module `POST /api/models` with `mode: "tito"`: accepted only with a tokenizer folder the gateway can read and a chat
 * template, refused otherwise with 400 and a `detail` naming the model and what is missing.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../../testing/serve.js";
import { QWEN2_TOKENIZER_DIR } from "./testing/tokenizer-fixture.js";

let gw: TestGateway;
afterEach(async () => {
  await gw?.close();
});

async function register(body: unknown): Promise<{ status: number; json: { detail?: string } }> {
  const res = await gw.call("POST", "/api/models", body);
  return { status: res.status, json: (await res.json()) as { detail?: string } };
}

describe("registering a tito model", () => {
  it("accepts a readable tokenizer folder and lists the endpoint with its mode and folder", async () => {
    gw = await startTestGateway();
    const model = { model: "p", endpoint: "http://h:8000/v1", mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR };
    expect((await register([model])).status).toBe(201);
    expect(await (await gw.call("GET", "/api/models?model=p")).json()).toEqual([{ ...model, version: 0 }]);
  });

  it("refuses tito without a tokenizer folder (400)", async () => {
    gw = await startTestGateway();
    const res = await register([{ model: "p", endpoint: "http://h:8000/v1", mode: "tito" }]);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/model p: mode tito needs `tokenizer`/);
    expect(await gw.store.listModels()).toEqual([]);
  });

  it("refuses a folder the gateway cannot read (400 naming the file)", async () => {
    gw = await startTestGateway();
    const res = await register([{ model: "p", endpoint: "http://h:8000/v1", mode: "tito", tokenizer: "/nonexistent" }]);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/cannot read tokenizer\.json \(\/nonexistent\/tokenizer\.json\): ENOENT$/);
    // A 4,000-character folder is quoted once, by its start.
    const long = await register([
      { model: "p", endpoint: "http://h:8000/v1", mode: "tito", tokenizer: `/${"d".repeat(4000)}` },
    ]);
    expect(long.status).toBe(400);
    expect(JSON.stringify(long.json).length).toBeLessThan(600);
  });

  it("refuses a folder without a chat template (400)", async () => {
    gw = await startTestGateway();
    const dir = mkdtempSync(join(tmpdir(), "arclight-notemplate-"));
    writeFileSync(join(dir, "tokenizer.json"), JSON.stringify({ model: { type: "BPE", vocab: {}, merges: [] } }));
    writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify({ eos_token: "</s>" }));
    const res = await register([{ model: "p", endpoint: "http://h:8000/v1", mode: "tito", tokenizer: dir }]);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/has no chat template/);
  });

  it("refuses one model registered with two modes in one call (400)", async () => {
    gw = await startTestGateway();
    const res = await register([
      { model: "p", endpoint: "http://a:8000/v1" },
      { model: "p", endpoint: "http://b:8000/v1", mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR },
    ]);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/every endpoint of a model needs the same mode/);
  });
});
