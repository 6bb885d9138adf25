/**
 * @module Frozen agents' model: a second engine with the starting weights, served and registered at version 0 and
 * never trained; its weights are hashed at start and stop (`frozen.json`) to show they never moved.
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

/** SHA-256 over a fresh checkpoint's `.safetensors` files (optimiser state excluded), in name order. */
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

/** Builds, serves and registers the frozen model; its stop hashes the weights again and writes `frozen.json`. */
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
