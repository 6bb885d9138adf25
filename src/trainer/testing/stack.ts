/**
 * @module Test stack of the trainer: a real gateway (buildApp, proxy mounted, 127.0.0.1 port 0), a tiny embedded
 * engine served by the real engine server, a real local controller running node agents, and a gateway client.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { ControllerConfigSchema } from "../../controller/config.js";
import { LocalController } from "../../controller/reconcile.js";
import { EmbeddedEngine } from "../../engine/embedded/engine.js";
import { buildEngineServer } from "../../engine/server/app.js";
import { GatewayClient } from "../../gateway/client.js";
import { startTestGateway, type TestGateway } from "../../gateway/testing/serve.js";
import { collocatedServing, type PolicyServing } from "../serving.js";

/** Path of the test agent (test/fixtures/trainer-agent.mjs). */
export const TEST_AGENT = fileURLToPath(new URL("../../../test/fixtures/trainer-agent.mjs", import.meta.url));

/** A running stack. */
export interface TrainerStack {
  gateway: TestGateway;
  client: GatewayClient;
  engine: EmbeddedEngine;
  serving: PolicyServing;
  controller: LocalController;
  /** Temp dir (runs/, controller state). */
  dir: string;
  close(): Promise<void>;
}

/**
 * Starts a stack. The engine is the `tiny` preset with a fixed seed, so two stacks start from the same weights.
 * @param options.poolSize - agent processes at once (default 8)
 * @param options.engineSeed - weight-init seed (default 0)
 */
export async function startTrainerStack(
  options: { poolSize?: number; engineSeed?: number } = {},
): Promise<TrainerStack> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-trainer-"));
  const gateway = await startTestGateway({ key: "test-key", model_name: "policy" });
  const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
  const engine = await EmbeddedEngine.create({ config: "tiny", seed: options.engineSeed ?? 0 });
  const server = await buildEngineServer({ engine, modelName: "policy" });
  const engineUrl = await server.listen({ host: "127.0.0.1", port: 0 });
  const config = ControllerConfigSchema.parse({
    gateway_url: gateway.url,
    key: "test-key",
    pool_size: options.poolSize ?? 8,
    poll_interval_seconds: 0.05,
    kill_grace_seconds: 0.5,
    spawn_rate_per_second: 1000,
    spawn_burst: 64,
    state_file: join(dir, "controller-state.json"),
    cwd: dir,
  });
  const logger = pino({ level: process.env.ARCLIGHT_TEST_LOG ?? "silent" });
  const controller = new LocalController({
    client,
    config,
    logger,
    baseEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  controller.start();
  return {
    gateway,
    client,
    engine,
    serving: collocatedServing(`${engineUrl}/v1`),
    controller,
    dir,
    async close() {
      await controller.shutdown(2000);
      await client.close();
      await gateway.close();
      await server.close();
      engine.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
