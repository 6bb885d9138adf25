/**
 * @module What the demo and `arclight eval` run on: the gateway as a child process on SQLite (greedy validation),
 * an embedded engine's OpenAI server in this process, a local controller, and the teacher server as a child
 * process while demonstrations are recorded. Every start registers its stop; {@link DemoStack.close} runs them in
 * reverse.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { Logger } from "pino";
import { startController, startEngineServer, startGatewayChild } from "../cli/train-stack.js";
import type { EmbeddedEngine } from "../engine/embedded/engine.js";
import { GatewayClient } from "../gateway/client.js";
import { CALCULATOR_DIR } from "./settings.js";

/** The running components of a demo. */
export interface DemoStack {
  gatewayUrl: string;
  client: GatewayClient;
  engine: EmbeddedEngine;
  /** The engine server's OpenAI base URL (`…/v1`). */
  engineEndpoint: string;
  /** Stops everything started, newest first (agents included); later calls return the first call's promise. */
  close(): Promise<void>;
}

/** What to start. */
export interface DemoStackOptions {
  /** Where gateway.db and the controller's state file go. */
  runDir: string;
  /** The engine to serve; the stack disposes it on close. */
  engine: EmbeddedEngine;
  modelName: string;
  /** Sampling temperature the gateway sets on train-mode calls; default 1. */
  trainTemperature?: number;
  poolSize: number;
  logger: Logger;
}

/**
 * Starts gateway, engine, engine server and controller. On a failure part-way, what was started is stopped.
 * @param options - run directory, engine, model name, agent pool size, logger
 * @returns the stack
 * @throws {CliError} when the gateway child does not start
 */
export async function startDemoStack(options: DemoStackOptions): Promise<DemoStack> {
  const stops: (() => Promise<void> | void)[] = [];
  stops.push(() => options.engine.dispose());
  let closing: Promise<void> | undefined;
  // Idempotent: a signal handler and the normal end may both close the stack.
  const close = (): Promise<void> => {
    closing ??= (async () => {
      for (const stop of stops.reverse()) await stop();
    })();
    return closing;
  };
  try {
    const gatewayArgs = ["--val-temperature", "0", "--train-temperature", String(options.trainTemperature ?? 1)];
    const gateway = await startGatewayChild(join(options.runDir, "gateway.db"), options.modelName, gatewayArgs);
    stops.push(() => gateway.stop());
    const client = new GatewayClient({ baseUrl: gateway.url, key: gateway.key });
    stops.push(() => client.close());
    const { engine } = options;
    const { server, endpoint } = await startEngineServer(engine, options.modelName);
    stops.push(() => server.close());
    const controller = startController(client, {
      gatewayUrl: gateway.url,
      key: gateway.key,
      poolSize: options.poolSize,
      stateFile: join(options.runDir, "controller-state.json"),
      logger: options.logger,
    });
    stops.push(() => controller.shutdown());
    return { gatewayUrl: gateway.url, client, engine, engineEndpoint: endpoint, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The teacher server child process. */
export interface TeacherChild {
  /** OpenAI base URL (`…/v1`). */
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts `examples/calculator/teacher-server.ts` (under tsx) on a free port and waits for its URL line.
 * @param mentalMathShare - share of one-operation questions the teacher answers without the tool, in [0, 1]
 *   (`--mental-math-share`, see the teacher's `TeacherOptions`)
 * @returns the endpoint and a stop function
 * @throws {Error} when it exits or does not report its URL within 30 s
 */
export async function startTeacherChild(mentalMathShare = 0): Promise<TeacherChild> {
  const script = `${CALCULATOR_DIR}teacher-server.ts`;
  const args = ["--import", import.meta.resolve("tsx"), script, "--port", "0"];
  const child = spawn(process.execPath, [...args, "--mental-math-share", String(mentalMathShare)], {
    stdio: ["ignore", "pipe", "inherit"],
    detached: true, // own process group: the parent stops it (see startGatewayChild)
  });
  const endpoint = await waitForLine(child, /teacher listening on (http:\/\/\S+)/, 30_000);
  child.stdout?.resume();
  return {
    endpoint,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      // A server still holding a keep-alive connection may take a while to close; do not wait for it forever.
      const force = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** Resolves with the first capture group of the first stdout match; rejects on exit or after `timeoutMs`. */
function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`teacher server did not report its URL within ${timeoutMs} ms`));
    }, timeoutMs);
    let seen = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`teacher server exited with code ${code} before listening`));
    });
  });
}
