/**
 * @module `--init-from CHECKPOINT`: the engine a spec names, started from an engine checkpoint's weights with a fresh
 * optimiser, so RL (or another SFT run) starts where an earlier run (e.g. `arclight sft`) ended.
 */
import { resolve } from "node:path";
import type { Engine } from "../engine/engine.js";
import { createEngine, type EngineSpec, threadOptions } from "./engine-factory.js";

/**
 * Builds the engine from a checkpoint: an embedded spec loads the checkpoint as its model (its shape comes from the
 * checkpoint, not a preset); any other engine is built from its spec and then loads the checkpoint through the
 * `Engine` interface. The optimiser starts afresh either way (a new phase of training).
 * @param spec - the engine the command would build
 * @param checkpointDir - an engine checkpoint directory (written by `Engine.saveCheckpoint`, e.g. runs/NAME/checkpoint)
 * @returns the engine (the caller disposes it)
 * @throws {CheckpointInvalid} (engine/checkpoint-error.ts) when the directory is missing or not a checkpoint of this
 *   engine; whatever {@link createEngine} throws
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

/**
 * The spec {@link createEngineFrom} builds its engine from: an embedded spec becomes the checkpoint's own (same training
 * and decode threads); any other spec is kept, and the checkpoint is loaded into its engine afterwards.
 * @param spec - the engine the command would build
 * @param checkpointDir - the checkpoint directory (resolved against the working directory)
 * @returns the spec
 */
export function specFrom(spec: EngineSpec, checkpointDir: string): EngineSpec {
  if (spec.kind !== "embedded") return spec;
  return { kind: "embedded", checkpoint: resolve(checkpointDir), ...threadOptions(spec) };
}
