/**
 * @module Test stack of the trainer: a real gateway (buildApp, proxy mounted, 127.0.0.1 port 0), and on it the run
 * layer's stack: a tiny embedded engine served by the real engine server, a real local controller running node
 * agents, and a gateway client. Options put the gateway on a SQLite file and a tamper server between the gateway and
 * the engine server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { EmbeddedEngine } from "../../src/engine/embedded/engine.js";
import type { GatewayClient } from "../../src/gateway/client.js";
import type { GatewayConfigInput } from "../../src/gateway/config.js";
import { startTestGateway, type TestGateway } from "../../src/gateway/testing/serve.js";
import { startStack } from "../../src/run/stack.js";
import { openStore } from "../../src/store/open.js";
import type { PolicyServing } from "../../src/trainer/serving.js";
import { startTamperUpstream, type Tamper } from "../../src/trainer/testing/tamper-upstream.js";

/** Path of the test agent (test/fixtures/trainer-agent.mjs). */
export const TEST_AGENT = fileURLToPath(new URL("../fixtures/trainer-agent.mjs", import.meta.url));

/** A running stack. */
export interface TrainerStack {
  gateway: TestGateway;
  client: GatewayClient;
  engine: EmbeddedEngine;
  serving: PolicyServing;
  /** Temp dir (runs/, controller state). */
  dir: string;
  close(): Promise<void>;
}

/** Options of {@link startTrainerStack}. */
export interface TrainerStackOptions {
  /** Agent processes at once (default 8). */
  poolSize?: number;
  /** Weight-init seed (default 0). */
  engineSeed?: number;
  /** Store the gateway's data in a SQLite file in the stack's temp dir (default: memory). */
  sqlite?: boolean;
  /** Gateway config overrides (e.g. `include_log_probs: false`). */
  gateway?: GatewayConfigInput;
  /** Rewrite every non-stream answer of the engine server before the gateway sees it. */
  tamper?: Tamper;
}

/**
 * Starts a stack. The engine is the `tiny` preset with a fixed seed, so two stacks start from the same weights.
 * @param options - pool size, engine seed, SQLite, gateway overrides, tamper
 */
export async function startTrainerStack(options: TrainerStackOptions = {}): Promise<TrainerStack> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-trainer-"));
  const store = options.sqlite ? await openStore(`sqlite:${join(dir, "gateway.sqlite")}`) : undefined;
  const gateway = await startTestGateway({ key: "test-key", model_name: "policy", ...options.gateway }, store);
  const engine = await EmbeddedEngine.create({ config: "tiny", seed: options.engineSeed ?? 0 });
  const stack = await startStack({
    runDir: dir,
    modelName: "policy",
    engine: async () => engine,
    gateway: { url: gateway.url, key: "test-key" },
    controller: {
      poolSize: options.poolSize ?? 8,
      settings: {
        poll_interval_seconds: 0.05,
        kill_grace_seconds: 0.5,
        spawn_rate_per_second: 1000,
        spawn_burst: 64,
        cwd: dir,
        // Each test's trainer config names its own agent command.
        allow_any_command: true,
      },
      baseEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    },
    logger: pino({ level: process.env.ARCLIGHT_TEST_LOG ?? "silent" }),
  });
  const tamper = options.tamper ? await startTamperUpstream(stack.serving.endpoints[0]!, options.tamper) : null;
  return {
    gateway,
    client: stack.client,
    engine,
    serving: tamper ? { endpoints: [tamper.url], publish: stack.serving.publish } : stack.serving,
    dir,
    async close() {
      await tamper?.close();
      await stack.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
