/**
 * docs/quickstart.md run as written: every `bash` block of the doc, in order, as real processes on loopback. The only
 * rewrites are the port numbers (8080 and 8000 become free ports, so the test can run beside anything) and the
 * working directory (a temp folder holding `examples/`, so `.arclight/` is its own). `npx arclight` runs the sources
 * through tsx, and `python3` is the project's Python venv (it has the `openai` package the agent needs).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { runProcess } from "../src/testing/run-process.js";
import { tempDir } from "../src/testing/temp-dir.js";

const ROOT = resolve(import.meta.dirname, "..");
const TSX_LOADER = createRequire(import.meta.url).resolve("tsx");
const MAIN = join(ROOT, "src/cli/main.ts");

/** The doc's `bash` blocks, in order. */
function bashBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Polls `url` until it answers 200, or throws naming `what` and the last output of the process behind it. */
async function waitReady(what: string, url: string, output: () => string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not come up at ${url}; its output:\n${output().slice(-4000)}`);
}

const servers: ChildProcess[] = [];
afterEach(() => {
  // Each long-running block runs in its own process group: signal the group, so npx's child goes too.
  for (const child of servers.splice(0))
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
});

describe.skipIf(skipWithoutPython())("docs/quickstart.md", () => {
  it("records the agent's proxied call (status ok, HTTP 200) and its reward, run exactly as the doc writes it", async () => {
    const blocks = bashBlocks(readFileSync(join(ROOT, "docs/quickstart.md"), "utf8"));
    expect(blocks).toHaveLength(6);
    const gatewayPort = await freePort();
    const enginePort = await freePort();
    const ported = blocks.map((b) =>
      b.replaceAll(/\b8080\b/g, String(gatewayPort)).replaceAll(/\b8000\b/g, String(enginePort)),
    );
    const cwd = tempDir("arclight-quickstart-");
    symlinkSync(join(ROOT, "examples"), join(cwd, "examples"));
    const bin = join(cwd, ".bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "python3"), `#!/bin/sh\nexec ${testPython()} "$@"\n`);
    writeFileSync(
      join(bin, "npx"),
      `#!/bin/sh\n[ "$1" = arclight ] || exit 127\nshift\nexec ${process.execPath} --import ${TSX_LOADER} ${MAIN} "$@"\n`,
    );
    chmodSync(join(bin, "python3"), 0o755);
    chmodSync(join(bin, "npx"), 0o755);
    const env = { PATH: `${bin}:${process.env.PATH}`, HOME: cwd };

    const background = (script: string): (() => string) => {
      const child = spawn("bash", ["-euc", script], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      servers.push(child);
      let output = "";
      child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
      return () => output;
    };
    const foreground = async (script: string): Promise<string> => {
      const result = await runProcess(["bash", "-euc", script], { cwd, env });
      expect(result.code, `${script}\n${result.stderr}`).toBe(0);
      return result.stdout;
    };

    // 1. gateway, 2. model server: each in its own terminal.
    const gatewayOutput = background(ported[0] as string);
    const engineOutput = background(ported[1] as string);
    await waitReady("the gateway", `http://127.0.0.1:${gatewayPort}/healthz`, gatewayOutput);
    await waitReady("the engine server", `http://127.0.0.1:${enginePort}/v1/models`, engineOutput);
    // 3. register the model server.
    await foreground(ported[2] as string);
    // 4. controller, 5. a rollout, 6. wait for it and read its events.
    const controllerOutput = background(ported[3] as string);
    await foreground(ported[4] as string);
    writeFileSync(join(cwd, "step6.sh"), ported[5] as string);
    const events = JSON.parse(
      await foreground("timeout 120 bash -eu step6.sh").catch((err: Error) => {
        throw new Error(`${err.message}\ncontroller output:\n${controllerOutput().slice(-4000)}`);
      }),
    ) as { event_type: string; data: Record<string, unknown> }[];

    const request = events.find((e) => e.event_type === "model_request");
    expect(request?.data).toMatchObject({ status: "ok", http_status: 200, server: { model: "policy" } });
    expect(request?.data.response_token_ids).not.toEqual([]);
    expect(events.some((e) => e.event_type === "reward")).toBe(true);
  }, 240_000);
});
