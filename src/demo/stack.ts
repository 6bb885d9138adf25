/**
 * @module What the demo and `arclight eval` run on: the gateway as a child process on SQLite (greedy validation),
 * an embedded engine's OpenAI server in this process, a local controller, and the teacher server as a child
 * process while demonstrations are recorded. Every start registers its stop; {@link DemoStack.close} runs them in
 * reverse.
 */

import { join } from "node:path";
import type { Logger } from "pino";
import { startController, startEngineServer, startGatewayChild } from "../cli/train-stack.js";
import type { EmbeddedEngine } from "../engine/embedded/engine.js";
import { GatewayClient } from "../gateway/client.js";
import { startServerChild } from "../process/server-child.js";
import { CALCULATOR_DIR } from "./settings.js";

/** The running components of a demo. */
export interface DemoStack {
  gatewayUrl: string;
  /** The gateway child's random key (the dashboard URL carries it). */
  gatewayKey: string;
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
    return { gatewayUrl: gateway.url, gatewayKey: gateway.key, client, engine, engineEndpoint: endpoint, close };
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
  const tsx = import.meta.resolve("tsx");
  const child = await startServerChild({
    argv: [process.execPath, "--import", tsx, script, "--port", "0", "--mental-math-share", String(mentalMathShare)],
    urlPattern: /teacher listening on (http:\/\/\S+)/,
    what: "teacher server",
  });
  return { endpoint: child.url, stop: child.stop };
}
