/**
 * The engine server's defences (issue 23, defect 9): the admin key on pause/resume/load_weights, JSON-only POSTs
 * (a cross-origin `text/plain` POST paused generation), load_weights confined to the checkpoint root after symlinks
 * are resolved, errors that neither quote files nor tell what exists outside the root, and a header timeout for
 * stalled sockets. A real server on loopback serving a scripted engine.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../testing/temp-dir.js";
import { ScriptedEngine } from "../testing/scripted-engine.js";
import { buildEngineServer, type EngineServerOptions } from "./app.js";

const KEY = "engine-admin-key";
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(options: Partial<EngineServerOptions> = {}): Promise<{ url: string; engine: ScriptedEngine }> {
  const engine = new ScriptedEngine(256, () => [65]);
  const app = await buildEngineServer({ engine, modelName: "m", key: KEY, ...options });
  closers.push(() => app.close());
  return { url: await app.listen({ port: 0, host: "127.0.0.1" }), engine };
}

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

const admin = { authorization: `Bearer ${KEY}` };
const chat = { messages: [{ role: "user", content: "x" }], max_tokens: 1 };

describe("engine server admin key", () => {
  it.each(["/pause", "/resume", "/v1/load_weights"])(
    "answers 401 to %s without the key, and with a wrong one",
    async (path) => {
      const { url } = await serve();
      const attempts: Record<string, string>[] = [{}, { authorization: "Bearer nope" }, { "x-api-key": "nope" }];
      for (const headers of attempts) {
        const res = await post(url, path, { path: "/tmp" }, headers);
        expect(res.status).toBe(401);
        expect(JSON.parse(res.text).detail).toBe("Missing or invalid admin key");
      }
    },
  );

  it("pauses with the key (Bearer or x-api-key) and keeps generation routes open to the gateway's proxy", async () => {
    const { url } = await serve();
    expect((await post(url, "/pause", {}, admin)).status).toBe(200);
    expect((await post(url, "/resume", {}, { "x-api-key": KEY })).status).toBe(200);
    expect((await post(url, "/v1/chat/completions", chat)).status).toBe(200);
  });
});

describe("engine server takes JSON only", () => {
  it("refuses a cross-origin text/plain POST with 415, and generation is not paused", async () => {
    // What a web page can send without a CORS preflight: text/plain, no custom headers. Even with no key set.
    const { url } = await serve({ key: "" });
    const pause = await fetch(`${url}/pause`, {
      method: "POST",
      headers: { "content-type": "text/plain;charset=UTF-8", origin: "https://evil.example" },
      body: "{}",
    });
    expect(pause.status).toBe(415);
    expect(((await pause.json()) as { detail: string }).detail).toMatch(/POST bodies must be application\/json/);
    const form = await post(url, "/v1/chat/completions", "a=b", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.status).toBe(415);
    const bare = await fetch(`${url}/pause`, { method: "POST" });
    expect(bare.status).toBe(415);
    // Not paused: a generation answers at once.
    expect((await post(url, "/v1/chat/completions", chat)).status).toBe(200);
  });
});

describe("load_weights stays inside the checkpoint root", () => {
  function layout(): { root: string; outside: string } {
    const base = tempDir("arclight-root-");
    const root = join(base, "ckpts");
    const outside = join(base, "secret");
    mkdirSync(root);
    mkdirSync(outside);
    writeFileSync(join(outside, "config.json"), "TOP-SECRET-CONTENT");
    return { root, outside };
  }

  it("answers 403 to a ../ escape, the same whether the target exists or not, quoting nothing", async () => {
    const { root, outside } = layout();
    const { url, engine } = await serve({ checkpointRoot: root });
    const existing = await post(url, "/v1/load_weights", { path: join(root, "..", "secret") }, admin);
    const missing = await post(url, "/v1/load_weights", { path: join(root, "..", "nothing-here") }, admin);
    expect([existing.status, missing.status]).toEqual([403, 403]);
    expect(JSON.parse(existing.text).detail).toBe(
      `load_weights ${join(root, "..", "secret")}: not inside the checkpoint root`,
    );
    expect(JSON.parse(missing.text).detail).toMatch(/: not inside the checkpoint root$/);
    expect(existing.text).not.toContain("TOP-SECRET");
    expect(engine.policyVersion).toBe(0);
    expect(outside).toBeTruthy();
  });

  it("answers 403 to a symlink inside the root that points outside it", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "escape"));
    const { url, engine } = await serve({ checkpointRoot: root });
    const res = await post(url, "/v1/load_weights", { path: join(root, "escape") }, admin);
    expect(res.status).toBe(403);
    expect(res.text).not.toContain("TOP-SECRET");
    expect(engine.policyVersion).toBe(0);
  });

  it("answers 400 without quoting an unparsable config.json inside the root", async () => {
    const { root } = layout();
    mkdirSync(join(root, "v1"));
    writeFileSync(join(root, "v1", "config.json"), "TOP-SECRET-CONTENT");
    writeFileSync(join(root, "v1", "model.safetensors"), "");
    const { EmbeddedEngine } = await import("../embedded/engine.js");
    const engine = await EmbeddedEngine.create({
      config: { vocab: 261, d_model: 8, n_layers: 1, n_heads: 2, context: 16 },
    });
    closers.push(async () => engine.dispose());
    const app = await buildEngineServer({ engine, modelName: "m", key: KEY, checkpointRoot: root });
    closers.push(() => app.close());
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    const res = await post(url, "/v1/load_weights", { path: join(root, "v1") }, admin);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).detail).toBe(`load_weights ${join(root, "v1")}: config.json is not JSON`);
    expect(res.text).not.toContain("SECRET");
  });

  it("answers 403 when no checkpoint root is configured", async () => {
    const { url } = await serve();
    const res = await post(url, "/v1/load_weights", { path: "/tmp" }, admin);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).detail).toMatch(/--checkpoint-root/);
  });
});

describe("engine server timeouts", () => {
  it("closes a socket whose headers never finish (408) after the headers timeout", async () => {
    const { url } = await serve({ headersTimeoutSeconds: 0.3 });
    const socket = connect(Number(new URL(url).port), "127.0.0.1");
    socket.write("POST /pause HTTP/1.1\r\nHost: x\r\n"); // no blank line: the headers never end
    const started = Date.now();
    const answer = await new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk;
      });
      socket.on("close", () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
