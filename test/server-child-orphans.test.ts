/**
 * A gateway child never outlives the arclight process that started it: not when that process exits at once (a second
 * Ctrl-C calls process.exit), and not when it is killed with SIGKILL and can stop nothing itself. Real processes: a
 * parent Node process (tsx) that starts `arclight gateway` on SQLite through `startGatewayChild`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { processAlive } from "../src/controller/local.js";

const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const GATEWAY_CHILD = fileURLToPath(new URL("../src/run/gateway-child.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "arclight-orphans-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts a parent that starts a gateway child, prints its pid, then runs `then` (JS source). */
function parentWithGateway(name: string, then: string): { parent: ChildProcess; gatewayPid: Promise<number> } {
  const script = [
    `const { startGatewayChild } = await import(${JSON.stringify(GATEWAY_CHILD)});`,
    `const child = await startGatewayChild(${JSON.stringify(join(dir, `${name}.db`))}, "policy");`,
    "console.log('gateway pid ' + child.process.pid);",
    then,
  ].join("\n");
  const parent = spawn(process.execPath, ["--import", TSX, "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const gatewayPid = new Promise<number>((resolve, reject) => {
    let seen = "";
    parent.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /gateway pid (\d+)/.exec(seen);
      if (match) resolve(Number(match[1]));
    });
    parent.on("exit", () => reject(new Error(`parent exited before the gateway started: ${seen}`)));
  });
  return { parent, gatewayPid };
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return !processAlive(pid);
}

describe("a gateway child ends with its parent", () => {
  it("when the parent calls process.exit without stopping it (a second Ctrl-C)", async () => {
    const { gatewayPid } = parentWithGateway("exit", "setTimeout(() => process.exit(130), 100);");
    const pid = await gatewayPid;
    expect(await gone(pid, 10_000)).toBe(true);
  }, 60_000);

  it("when the parent is killed with SIGKILL", async () => {
    const { parent, gatewayPid } = parentWithGateway("kill", "setInterval(() => {}, 1000);");
    const pid = await gatewayPid;
    expect(processAlive(pid)).toBe(true);
    parent.kill("SIGKILL");
    expect(await gone(pid, 10_000)).toBe(true); // it notices within a second and stops as on SIGTERM
  }, 60_000);
});
