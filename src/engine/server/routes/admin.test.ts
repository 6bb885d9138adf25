/**
 * Admin routes: pause holds new requests until resume; load_weights waits for in-flight requests, swaps, bumps the
 * reported policy version. Uses a scripted engine so generation length and timing are under the test's control.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../testing/temp-dir.js";
import { EmbeddedEngine } from "../../embedded/engine.js";
import { postJson } from "../../testing/http-client.js";
import { ScriptedEngine } from "../../testing/scripted-engine.js";
import { buildEngineServer } from "../app.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(tokens = 3): Promise<{ url: string; engine: ScriptedEngine }> {
  const engine = new ScriptedEngine(256, () => Array(tokens).fill(65));
  // Checkpoints are written by tempDir under the OS temp dir: that is the root load_weights may read.
  const app = await buildEngineServer({ engine, modelName: "m", checkpointRoot: tmpdir() });
  closers.push(() => app.close());
  return { url: await app.listen({ port: 0, host: "127.0.0.1" }), engine };
}

/** A model small enough to build in a few milliseconds. */
const tinyConfig = { vocab: 261, d_model: 16, n_layers: 1, n_heads: 2, context: 32 };

const chat = { messages: [{ role: "user", content: "x" }], max_tokens: 100 };

describe("pause and resume", () => {
  it("holds a request made while paused and answers it after resume", async () => {
    const { url, engine } = await serve();
    expect((await postJson(url, "/pause", {})).body).toEqual({ status: "paused", in_flight: 0 });
    let answered = false;
    const held = postJson(url, "/v1/chat/completions", chat).then((res) => {
      answered = true;
      return res;
    });
    // Other routes keep answering while generation is paused; three round trips give the held request time to arrive.
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/v1/models`)).status).toBe(200);
    expect(answered).toBe(false);
    expect(engine.calls).toEqual([]);
    expect((await postJson(url, "/resume", {})).body).toEqual({ status: "running" });
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe("AAA");
  });
});

describe("POST /v1/load_weights", () => {
  it("bumps the policy version reported in later answers (header and body)", async () => {
    const { url } = await serve();
    const dir = tempDir("arclight-ckpt-");
    const before = await postJson(url, "/v1/chat/completions", chat);
    expect(before.body.policy_version).toBe(0);
    const load = await postJson(url, "/v1/load_weights", { path: dir });
    expect(load.status).toBe(200);
    expect(load.body).toEqual({ status: "ok", policy_version: 1 });
    const after = await postJson(url, "/v1/chat/completions", chat);
    expect(after.headers.get("x-policy-version")).toBe("1");
    expect(after.body.policy_version).toBe(1);
  });

  it("answers 404 naming a missing checkpoint directory and 400 without a path", async () => {
    const { url } = await serve();
    const path = join(tmpdir(), "arclight-no-such-ckpt");
    const missing = await postJson(url, "/v1/load_weights", { path });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain(path);
    expect((await postJson(url, "/v1/load_weights", {})).status).toBe(400);
  });

  it("waits for an in-flight stream to finish on the old weights before swapping", async () => {
    const { url } = await serve(40);
    const dir = tempDir("arclight-ckpt-");
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...chat, stream: true }),
    });
    expect(response.headers.get("x-policy-version")).toBe("0"); // admitted: headers are sent at admission
    let streamEnded = false;
    const streamText = response.text().then((text) => {
      streamEnded = true;
      return text;
    });
    const load = await postJson(url, "/v1/load_weights", { path: dir });
    expect(streamEnded).toBe(true);
    expect(load.body.policy_version).toBe(1);
    const text = await streamText;
    expect(text).toContain('"finish_reason":"length"');
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  });
});

describe("POST /v1/load_weights with a bad path keeps serving the old weights", () => {
  it("answers 400 {error, detail, code} for a file and for a directory that is not a checkpoint", async () => {
    const { url } = await serve();
    const dir = tempDir("arclight-ckpt-");
    writeFileSync(join(dir, "file.txt"), "not a checkpoint");
    const file = await postJson(url, "/v1/load_weights", { path: join(dir, "file.txt") });
    expect(file.status).toBe(400);
    const detail = `load_weights ${join(dir, "file.txt")}: not a directory (expected a checkpoint directory)`;
    expect(file.body).toEqual({
      error: { message: detail, type: "BadRequestError", param: null, code: 400 },
      detail,
      code: "bad_request",
    });
  });

  it("answers 400 naming the problem for an invalid config.json or another model shape, weights unchanged", async () => {
    const engine = await EmbeddedEngine.create({ config: tinyConfig, seed: 3 });
    closers.push(async () => engine.dispose());
    const app = await buildEngineServer({ engine, modelName: "m", checkpointRoot: tmpdir() });
    closers.push(() => app.close());
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    const probe = [[1, 2, 3, 4]];
    const before = await engine.logprobs(probe);

    const bad = tempDir("arclight-ckpt-");
    writeFileSync(join(bad, "config.json"), '{"x":1}');
    const invalid = await postJson(url, "/v1/load_weights", { path: bad });
    expect(invalid.status).toBe(400);
    expect(invalid.body.code).toBe("bad_request");
    expect(invalid.body.detail).toMatch(new RegExp(`^load_weights ${bad}: config\\.json: vocab: `));

    const other = await EmbeddedEngine.create({ config: { ...tinyConfig, d_model: 8 }, seed: 3 });
    closers.push(async () => other.dispose());
    const otherDir = tempDir("arclight-ckpt-");
    await other.saveCheckpoint(otherDir);
    const mismatch = await postJson(url, "/v1/load_weights", { path: otherDir });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.detail).toContain("has config");

    const models = await fetch(`${url}/v1/models`);
    expect(models.status).toBe(200);
    const after = await postJson(url, "/v1/completions", { prompt: [1, 2, 3], max_tokens: 2 });
    expect(after.status).toBe(200);
    expect(after.body.policy_version).toBe(0);
    expect(await engine.logprobs(probe)).toEqual(before);
  });
});
