/** @module `--init-from CHECKPOINT`: a spec's engine started from a checkpoint's weights with a fresh optimiser. */
import { resolve } from "node:path";
import type { Engine } from "../engine/engine.js";
import { createEngine, type EngineSpec, threadOptions } from "./engine-factory.js";

/**
 * Builds the engine from a checkpoint (see {@link specFrom}); the caller disposes it.
 * @throws {CheckpointInvalid} when the directory is not a checkpoint of this engine
 */
export async function createEngineFrom(spec: EngineSpec, checkpointDir: string): Promise<Engine> {
  const dir = resolve(checkpointDir);
  const engine = await createEngine(specFrom(spec, dir));
  try {
    if (spec.kind !== "embedded") await engine.loadCheckpoint(dir);
    await engine.resetOptimizer();
    return engine;
  } catch (err) {
    engine.dispose();
    throw err;
  }
}

/** An embedded spec becomes the checkpoint's own (threads kept); any other spec loads the checkpoint afterwards. */
export function specFrom(spec: EngineSpec, checkpointDir: string): EngineSpec {
  if (spec.kind !== "embedded") return spec;
  return { kind: "embedded", checkpoint: resolve(checkpointDir), ...threadOptions(spec) };
}
