/**
 * @module `POST /api/models` with `mode: "tito"`: accepted only with a tokenizer folder the gateway can read and a chat
 * template, refused otherwise with 400 and a `detail` naming the model and what is missing.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTokenizerFolder } from "../../../wire/tokenizer-folder.js";
import { type ScriptedUpstream, startScriptedUpstream } from "../../testing/scripted-upstream.js";
import { startTestGateway, type TestGateway } from "../../testing/serve.js";
import { QWEN2_TOKENIZER_DIR } from "./testing/tokenizer-fixture.js";
import { PROBE_TEXT } from "./tokenizer-probe.js";

let gw: TestGateway;
let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await gw?.close();
  await upstream?.close();
  upstream = undefined;
});

/** A model server whose `POST /tokenize` answers `tokens` in vLLM's shape (every other path: 404). */
function tokenizingServer(tokens: number[]): Promise<ScriptedUpstream> {
  return startScriptedUpstream((req, res) => {
    res.writeHead(req.url === "/tokenize" ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(req.url === "/tokenize" ? { count: tokens.length, max_model_len: 32768, tokens } : {}));
  });
}

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

  it("refuses a folder whose tokenizer splits text otherwise than the model server's /tokenize (400)", async () => {
    gw = await startTestGateway();
    upstream = await tokenizingServer([9707, 11, 1879]);
    const res = await register([{ model: "p", endpoint: upstream.url, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR }]);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/^model p: tokenizer folder .* does not match the model served at http:\/\/127/);
    expect(res.json.detail).toMatch(/first different at position \d+/);
    expect(await gw.store.listModels()).toEqual([]);
  });

  it("accepts a folder that tokenizes as the server does, and a server that cannot be asked", async () => {
    gw = await startTestGateway();
    const ids = readTokenizerFolder(QWEN2_TOKENIZER_DIR).tokenizer.encode(PROBE_TEXT);
    upstream = await tokenizingServer(ids);
    const same = { model: "p", endpoint: upstream.url, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR };
    expect((await register([same])).status).toBe(201);
    // Nothing listens there: the server may start later, so the folder is taken as it is.
    const down = { model: "q", endpoint: "http://127.0.0.1:9/v1", mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR };
    expect((await register([down])).status).toBe(201);
  });
});
