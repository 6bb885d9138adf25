/**
 * The stack builder starts engine, gateway, engine server and controller, and stops them newest first on every exit
 * path: a body that returns, a body that throws, an abort while the body runs, an abort while a component is still
 * starting, and a component that fails to start.
 * Real components: the gateway child (`arclight gateway` on SQLite) or an in-process gateway, the engine server on
 * loopback, a local controller; the engine is the scripted test double, so no model is built.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedEngine } from "../engine/testing/scripted-engine.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { ComponentStartFailed } from "./gateway-child.js";
import { type Stack, type StackOptions, startAgentStack, startStack, withStack } from "./stack.js";

const logger = pino({ level: "silent" });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempRunDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "arclight-stack-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function testGateway(): Promise<TestGateway> {
  const gateway = await startTestGateway({ key: "k", model_name: "policy" });
  cleanups.push(() => gateway.close());
  return gateway;
}

/** A scripted engine that records, at dispose time, whether the engine server still answered. */
function recordingEngine(events: string[]) {
  const engine = new ScriptedEngine();
  engine.dispose = () => void events.push("engine disposed");
  return engine;
}

/** True when nothing answers at `url` any more. */
async function refuses(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return false;
  } catch {
    return true;
  }
}

/** Command lines of this process's child processes that mention `text` (e.g. a run directory). */
function childrenMentioning(text: string): string[] {
  const out = execFileSync("ps", ["-o", "args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return out.split("\n").filter((line) => line.includes(text));
}

function baseOptions(runDir: string, events: string[]): StackOptions {
  return {
    runDir,
    modelName: "policy",
    engine: async () => recordingEngine(events),
    controller: { poolSize: 1, settings: { poll_interval_seconds: 0.05 } },
    logger,
  };
}

/** The engine server's root URL from the stack's `/v1` endpoint. */
const serverUrl = (stack: Stack) => (stack.serving.endpoints[0] as string).replace(/\/v1$/, "");

describe("startStack / withStack", () => {
  it("with a gateway child: serves, then closes server, controller and gateway before disposing the engine", async () => {
    const events: string[] = [];
    const runDir = tempRunDir();
    let urls: string[] = [];
    const answer = await withStack(baseOptions(runDir, events), async (stack) => {
      urls = [stack.gatewayUrl, serverUrl(stack)];
      for (const url of urls) expect(await refuses(url)).toBe(false);
      return "done";
    });
    expect(answer).toBe("done");
    expect(events).toEqual(["engine disposed"]);
    expect(existsSync(join(runDir, "gateway.db"))).toBe(true);
    for (const url of urls) expect(await refuses(url)).toBe(true);
  }, 60_000);

  it("a body that throws still closes everything, and the error reaches the caller", async () => {
    const events: string[] = [];
    const gateway = await testGateway();
    let server = "";
    const failing = withStack(
      { ...baseOptions(tempRunDir(), events), gateway: { url: gateway.url, key: "k" } },
      (s) => {
        server = serverUrl(s);
        throw new Error("body failed");
      },
    );
    await expect(failing).rejects.toThrow("body failed");
    expect(events).toEqual(["engine disposed"]);
    expect(await refuses(server)).toBe(true);
  });

  it("aborting closeOnAbort closes the stack while the body is still running", async () => {
    const events: string[] = [];
    const gateway = await testGateway();
    const aborter = new AbortController();
    const options = { ...baseOptions(tempRunDir(), events), gateway: { url: gateway.url, key: "k" } };
    const stack = await startStack({ ...options, closeOnAbort: aborter.signal });
    aborter.abort();
    await stack.close(); // the same close the abort started, awaited once more
    expect(events).toEqual(["engine disposed"]);
    expect(await refuses(serverUrl(stack))).toBe(true);
  });

  it("an abort while the gateway child is starting stops the child once it is up", async () => {
    const events: string[] = [];
    const runDir = tempRunDir();
    const aborter = new AbortController();
    const engine = async () => {
      // Fires while the gateway child is being spawned (that takes hundreds of ms): the Ctrl-C of a starting demo.
      setTimeout(() => aborter.abort(new Error("interrupted by SIGINT")), 0);
      return recordingEngine(events);
    };
    const starting = startStack({ ...baseOptions(runDir, events), engine, closeOnAbort: aborter.signal });
    await expect(starting).rejects.toThrow("interrupted by SIGINT");
    expect(events).toEqual(["engine disposed"]);
    expect(existsSync(join(runDir, "gateway.db"))).toBe(true); // the gateway child did start…
    expect(childrenMentioning(runDir)).toEqual([]); // …and was stopped
  }, 60_000);

  it("a signal aborted before the start disposes the engine and starts nothing else", async () => {
    const events: string[] = [];
    const runDir = tempRunDir();
    const options = { ...baseOptions(runDir, events), closeOnAbort: AbortSignal.abort(new Error("early")) };
    await expect(startStack(options)).rejects.toThrow("early");
    expect(events).toEqual(["engine disposed"]);
    expect(existsSync(join(runDir, "gateway.db"))).toBe(false);
  });

  it("close runs once however often it is called", async () => {
    const events: string[] = [];
    const gateway = await testGateway();
    const stack = await startStack({ ...baseOptions(tempRunDir(), events), gateway: { url: gateway.url, key: "k" } });
    await Promise.all([stack.close(), stack.close()]);
    await stack.close();
    expect(events).toEqual(["engine disposed"]);
  });

  it("an engine factory that throws starts nothing", async () => {
    const runDir = tempRunDir();
    const options = { ...baseOptions(runDir, []), engine: () => Promise.reject(new RangeError("bad preset")) };
    await expect(startStack(options)).rejects.toThrow("bad preset");
    expect(existsSync(join(runDir, "gateway.db"))).toBe(false);
  });

  it("a gateway child that exits before listening is ComponentStartFailed, and the engine is disposed", async () => {
    const events: string[] = [];
    const options = { ...baseOptions(tempRunDir(), events), gatewayArgs: ["--no-such-flag"] };
    await expect(startStack(options)).rejects.toBeInstanceOf(ComponentStartFailed);
    expect(events).toEqual(["engine disposed"]);
  }, 60_000);
});

describe("startAgentStack", () => {
  it("starts a gateway child and a controller without an engine, and close stops the gateway", async () => {
    const runDir = tempRunDir();
    const stack = await startAgentStack({
      runDir,
      modelName: "policy",
      controller: { poolSize: 1, settings: { poll_interval_seconds: 0.05 } },
      logger,
    });
    expect(await stack.client.healthz()).toMatchObject({ status: "ok" });
    expect(existsSync(join(runDir, "gateway.db"))).toBe(true);
    await stack.close();
    expect(await refuses(stack.gatewayUrl)).toBe(true);
  }, 60_000);

  it("closes at once when its abort signal fires", async () => {
    const aborter = new AbortController();
    const stack = await startAgentStack({
      runDir: tempRunDir(),
      modelName: "policy",
      controller: { poolSize: 1 },
      logger,
      closeOnAbort: aborter.signal,
    });
    aborter.abort();
    await stack.close();
    expect(await refuses(stack.gatewayUrl)).toBe(true);
  }, 60_000);
});
