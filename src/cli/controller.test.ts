import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway } from "../gateway/testing/serve.js";

const TSX_LOADER = createRequire(import.meta.url).resolve("tsx");
const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Resolves with the exit code once `child` exits. */
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("arclight controller", () => {
  it("runs rollouts from the gateway and, on SIGTERM, fails live ones 'controller shutdown' and exits 0", async () => {
    const gateway = await startTestGateway({ key: "cli-key" });
    const client = new GatewayClient({ baseUrl: gateway.url, key: "cli-key" });
    const dir = mkdtempSync(join(tmpdir(), "arclight-cli-controller-"));
    cleanups.push(
      () => gateway.close(),
      () => client.close(),
      () => rmSync(dir, { recursive: true, force: true }),
    );
    // The agent gets a token of its own attempt, never the admin key.
    const quick = ["sh", "-c", 'case "$AGL_KEY" in aglt1.*) exit 0;; *) exit 1;; esac'];
    const slow = ["sleep", "300"];
    await client.createRollouts([
      { rollout_id: "quick", input: {}, config: { local: { command: quick } } },
      { rollout_id: "slow", input: {}, config: { local: { command: slow } } },
    ]);
    const args = ["controller", "--gateway-url", gateway.url, "--pool-size", "2", "--poll-interval", "0.05"];
    args.push("--allowed-commands", JSON.stringify([quick, slow]));
    const child = spawn(
      process.execPath,
      ["--import", TSX_LOADER, MAIN, ...args, "--state-file", join(dir, "s.json")],
      {
        env: { ...process.env, ARCLIGHT_KEY: "cli-key" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    cleanups.push(() => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    const exited = exitOf(child);
    await waitFor("quick succeeded and slow running", async () => {
      const [done, live] = await Promise.all([client.getRollout("quick"), client.getRollout("slow")]);
      return done.rollout.status.state === "succeeded" && live.rollout.status.state === "running" ? true : undefined;
    });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const { rollout: stopped } = await client.getRollout("slow");
    expect(stopped.status.state).toBe("failed");
    expect(stopped.status.error_message).toBe("controller shutdown");
  });

  it("exits 2 naming a bad flag", async () => {
    const child = spawn(process.execPath, ["--import", TSX_LOADER, MAIN, "controller", "--pool-size", "many"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    expect(await exitOf(child)).toBe(2);
    expect(stderr.trim()).toBe("arclight: --pool-size many: expected an integer");
  });

  it("exits 2 with one line naming --state-file and what is wrong when the state file is unusable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-cli-controller-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "bad.json"), "{bad json");
    writeFileSync(join(dir, "empty.json"), "{}");
    mkdirSync(join(dir, "folder"));
    const run = async (name: string): Promise<{ code: number | null; stderr: string }> => {
      const args = ["controller", "--gateway-url", "http://127.0.0.1:9", "--state-file", join(dir, name)];
      const child = spawn(process.execPath, ["--import", TSX_LOADER, MAIN, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      cleanups.push(() => {
        if (child.exitCode === null) child.kill("SIGKILL");
      });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      return { code: await exitOf(child), stderr: stderr.trim() };
    };
    const [bad, empty, folder] = await Promise.all([run("bad.json"), run("empty.json"), run("folder")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(new RegExp(`^arclight: --state-file ${join(dir, "bad.json")}: not JSON \\(.*\\)$`));
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(
      /^arclight: --state-file \S+empty\.json: not a controller state file \(key version: .*\)$/,
    );
    expect(folder).toEqual({
      code: 2,
      stderr: `arclight: --state-file ${join(dir, "folder")}: is a directory, expected a JSON file`,
    });
  });

  it("logs an unreachable gateway once, as one line without a stack, while it keeps retrying", async () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-cli-controller-down-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const args = ["controller", "--gateway-url", "http://127.0.0.1:1", "--poll-interval", "0.05"];
    const child = spawn(
      process.execPath,
      ["--import", TSX_LOADER, MAIN, ...args, "--state-file", join(dir, "s.json")],
      {
        env: { ...process.env, ARCLIGHT_KEY: "k" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    cleanups.push(() => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    const exited = exitOf(child);
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    await waitFor("the first warning", async () => (output.includes("gateway unreachable") ? true : undefined), 90_000);
    // Many more passes fail (each after the client's own retries); none of them adds a line.
    await new Promise((r) => setTimeout(r, 3000));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const lines = output.trim().split("\n");
    expect(lines.filter((line) => line.includes("gateway unreachable"))).toHaveLength(1);
    expect(output).not.toContain("stack");
    expect(output).not.toContain("reconcile pass failed");
  }, 150_000);
});
