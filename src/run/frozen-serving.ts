/**
 * @module Frozen agents' model (`trainer.agents.frozen`): a second engine built like the trained one (so it holds the
 * starting weights), served by its own engine server and registered with the gateway under `agents.frozen_model` at
 * version 0. The trainer never updates it; the gateway's `agent_routes` sends the frozen agents' calls there. Its
 * weights are hashed when serving starts and when it stops (`runs/NAME/frozen.json`), so a run shows they never moved.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Engine } from "../engine/engine.js";
import { makeDirs } from "../fs/make-dirs.js";
import type { GatewayClient } from "../gateway/client.js";

/** What the stack needs to serve the frozen model. */
export interface FrozenOptions {
  /** Model name registered with the gateway (`agents.frozen_model`). */
  modelName: string;
  /** Builds the frozen engine: the same factory as the trained engine, so it starts from the same weights. */
  engine: () => Promise<Engine>;
}

/** A running frozen model. */
export interface FrozenServing {
  engine: Engine;
  /** Its engine server's `/v1` URL. */
  endpoint: string;
  /** SHA-256 of its weights when serving started. */
  startSha256: string;
}

/**
 * SHA-256 over an engine's saved weights: the `.safetensors` files of a fresh checkpoint except the optimiser state
 * (every file when there is none), in name order, each name then its bytes.
 * @param engine - any engine
 * @param scratchDir - an empty folder to save into; removed afterwards
 * @returns hex digest
 */
export async function weightsSha256(engine: Engine, scratchDir: string): Promise<string> {
  rmSync(scratchDir, { recursive: true, force: true });
  makeDirs(scratchDir);
  try {
    await engine.saveCheckpoint(scratchDir);
    const files = readdirSync(scratchDir).sort();
    const weights = files.filter((name) => name.endsWith(".safetensors") && !name.startsWith("optimizer"));
    const hash = createHash("sha256");
    for (const name of weights.length > 0 ? weights : files) {
      hash.update(name);
      hash.update(readFileSync(join(scratchDir, name)));
    }
    return hash.digest("hex");
  } finally {
    rmSync(scratchDir, { recursive: true, force: true });
  }
}

/**
 * Builds, serves and registers the frozen model.
 * @param options - its model name and engine factory
 * @param client - gateway client (registers `{model, endpoint, version: 0}`)
 * @param serve - starts an engine server for an engine under a model name (the stack's `startEngineServer`)
 * @param runDir - `runs/NAME`: `frozen.json` is written here
 * @returns the running model and a stop that hashes its weights again, records both hashes and closes it
 */
export async function startFrozenServing(
  options: FrozenOptions,
  client: GatewayClient,
  serve: (engine: Engine, modelName: string) => Promise<{ endpoint: string; close(): Promise<void> }>,
  runDir: string,
): Promise<{ frozen: FrozenServing; stop: () => Promise<void> }> {
  const engine = await options.engine();
  const scratch = join(runDir, "frozen-hash");
  const startSha256 = await weightsSha256(engine, scratch);
  const server = await serve(engine, options.modelName);
  await client.upsertModels([{ model: options.modelName, endpoint: server.endpoint, version: 0 }]);
  const stop = async () => {
    await server.close();
    const endSha256 = await weightsSha256(engine, scratch);
    const record = { model: options.modelName, start_sha256: startSha256, end_sha256: endSha256 };
    writeFileSync(join(runDir, "frozen.json"), `${JSON.stringify(record, null, 2)}\n`);
    engine.dispose();
  };
  return { frozen: { engine, endpoint: server.endpoint, startSha256 }, stop };
}
