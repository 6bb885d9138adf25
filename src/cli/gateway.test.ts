import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../testing/temp-dir.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const children: ChildProcess[] = [];

// Waits for the exits too: a gateway still closing its SQLite file must be gone before the test's dir is removed.
afterEach(async () => {
  const live = children.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of live) child.kill();
  await Promise.all(live.map((child) => once(child, "exit")));
});

/** A spawned `arclight gateway` with its output collected. */
interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout match of `pattern`; rejects at exit or after `timeoutMs`. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

function spawnGateway(args: string[], env: Record<string, string> = {}): Spawned {
  const childEnv = { ...process.env, ...env };
  delete childEnv.ARCLIGHT_KEY;
  delete childEnv.AGL_KEY;
  Object.assign(childEnv, env);
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "gateway", ...args], {
    cwd: REPO_ROOT,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk) => {
    out += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    err += String(chunk);
  });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const waitFor = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(out);
        if (!match) return false;
        cleanup();
        resolve(match);
        return true;
      };
      const onExit = () => {
        if (!check()) {
          cleanup();
          reject(new Error(`gateway exited before printing ${pattern}; stderr: ${err}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout: ${out}; stderr: ${err}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        child.off("exit", onExit);
      };
      if (check()) return;
      child.stdout?.on("data", check);
      child.once("exit", onExit);
    });
  return { child, stdout: () => out, stderr: () => err, waitFor, exited };
}

describe("arclight gateway (child process)", () => {
  it("prints its URL, serves /healthz, takes the key from ARCLIGHT_KEY, and exits 0 on SIGTERM", async () => {
    const gw = spawnGateway(["--port", "0", "--store", "memory", "--log-level", "info"], {
      ARCLIGHT_KEY: "child-secret",
    });
    const [, url] = await gw.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    expect((await fetch(`${url}/api/rollouts`)).status).toBe(401);
    const authed = await fetch(`${url}/api/rollouts`, { headers: { authorization: "Bearer child-secret" } });
    expect(authed.status).toBe(200);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(gw.stdout()).toContain("gateway stopped");
    expect(gw.stdout() + gw.stderr()).not.toContain("child-secret");
  });

  it("drains a request in flight at SIGINT before exiting 0", async () => {
    // debug: the gateway logs `incoming request` (the sign the request is in flight) at debug only.
    const gw = spawnGateway(["--port", "0", "--store", "memory", "--key", "", "--log-level", "debug"]);
    const [, url] = await gw.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    expect(gw.stderr()).toMatch(/WARNING: no API key set/);
    // Stream the body in two parts so the request is provably in flight when the signal arrives.
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('[{"rollout_id": "drained", '));
        await gate;
        controller.enqueue(new TextEncoder().encode('"input": 1}]'));
        controller.close();
      },
    });
    const pending = fetch(`${url}/api/rollouts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    await gw.waitFor(/"url":"\/api\/rollouts"[^\n]*"msg":"incoming request"/);
    gw.child.kill("SIGINT");
    await gw.waitFor(/shutting down/);
    release();
    const res = await pending;
    expect(res.status).toBe(201);
    expect(((await res.json()) as { rollout_id: string }[])[0]?.rollout_id).toBe("drained");
    expect(await gw.exited).toBe(0);
  });

  it("closes the SQLite store on SIGTERM; a restart on the same file serves the same rollouts and events", async () => {
    const dir = tempDir("arclight-cli-sqlite-");
    const args = ["--port", "0", "--store", `sqlite:${join(dir, "gw.db")}`, "--key", "k", "--log-level", "warn"];
    const headers = { authorization: "Bearer k", "content-type": "application/json" };
    const first = spawnGateway(args);
    const [, url1] = await first.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    await fetch(`${url1}/api/rollouts`, { method: "POST", headers, body: '[{"rollout_id": "kept", "input": 1}]' });
    const posted = await fetch(`${url1}/api/rollouts/kept/attempt/0/events`, {
      method: "POST",
      headers,
      body: '{"event_type": "reward", "data": {"value": 0.5}}',
    });
    expect(posted.status).toBe(200);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);

    const second = spawnGateway(args);
    const [, url2] = await second.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const events = (await (await fetch(`${url2}/api/rollouts/kept/events`, { headers })).json()) as unknown[];
    expect(events).toEqual([await posted.json()]);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("on SIGTERM, a client stalled mid-body holds the gateway no longer than the grace period", async () => {
    // A half-sent body once blocked shutdown for good: close() waits for in-flight requests.
    const args = ["--port", "0", "--store", "memory", "--shutdown-grace-seconds", "1", "--log-level", "debug"];
    const gw = spawnGateway(args, { ARCLIGHT_KEY: "k" });
    const [, url] = await gw.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const socket = connect(Number(new URL(url!).port), "127.0.0.1");
    socket.on("error", () => {});
    socket.write(
      "POST /api/rollouts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n" +
        'Content-Length: 1000\r\n\r\n[{"rollout_id"',
    );
    await gw.waitFor(/"url":"\/api\/rollouts"[^\n]*"msg":"incoming request"/);
    const signalledAt = Date.now();
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(10_000);
    socket.destroy();
  });

  it("warns when --key is given on the command line, and reads --key-file without a warning", async () => {
    const onArgv = spawnGateway(["--port", "0", "--store", "memory", "--key", "argv-secret"]);
    await onArgv.waitFor(/listening on/);
    expect(onArgv.stderr()).toContain("warning: --key is visible to every user of this machine (ps)");
    expect(onArgv.stderr()).not.toContain("argv-secret");
    const file = join(tempDir("arclight-key-"), "key");
    writeFileSync(file, "file-secret\n", { mode: 0o600 });
    const fromFile = spawnGateway(["--port", "0", "--store", "memory", "--key-file", file]);
    const [, url] = await fromFile.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const authed = await fetch(`${url}/api/rollouts`, { headers: { authorization: "Bearer file-secret" } });
    expect(authed.status).toBe(200);
    expect(fromFile.stderr()).not.toContain("warning");
  });

  it("exits non-zero with one line naming a bad flag value", async () => {
    const gw = spawnGateway(["--port", "abc", "--store", "memory"]);
    expect(await gw.exited).not.toBe(0);
    expect(gw.stderr().trim()).toBe("arclight: --port abc: expected an integer");
  });

  it("exits non-zero naming an unknown flag, and naming an unreadable config file", async () => {
    const unknown = spawnGateway(["--bogus", "1"]);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr().trim().split("\n")).toEqual(["arclight: unknown option '--bogus' (add --help for usage)"]);
    const missing = spawnGateway(["--config", "/nonexistent/gateway.yaml"]);
    expect(await missing.exited).not.toBe(0);
    expect(missing.stderr()).toContain("--config /nonexistent/gateway.yaml: cannot read the file (ENOENT)");
  });
});
