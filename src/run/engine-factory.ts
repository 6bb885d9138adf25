/**
 * @module The engine factory seam of the stack: an `EngineSpec` names which engine to build, `createEngine` builds it.
 * Today one kind, `embedded` (a fresh model or a checkpoint); another engine adds its kind to the union and one case
 * here, and every command that builds a stack can run it.
 */
import { MODEL_PRESETS, type ModelConfig, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { PositionInit } from "../engine/embedded/params.js";
import type { Engine } from "../engine/engine.js";

/** The embedded CPU engine, fresh weights: a preset name or a model shape, and the weight-init seed. */
export interface EmbeddedFreshSpec {
  kind: "embedded";
  model: ModelPreset | Readonly<ModelConfig>;
  seed: number;
  /** How the position table starts; default the engine's. */
  positionInit?: PositionInit;
}

/** The embedded CPU engine loaded from a checkpoint directory (written by `Engine.saveCheckpoint`). */
export interface EmbeddedCheckpointSpec {
  kind: "embedded";
  checkpoint: string;
}

/** Which engine to build. */
export type EngineSpec = EmbeddedFreshSpec | EmbeddedCheckpointSpec;

/** Names of the embedded presets, for messages. */
export const EMBEDDED_PRESETS = Object.keys(MODEL_PRESETS) as ModelPreset[];

/**
 * Builds the engine a spec names.
 * @param spec - kind and settings
 * @returns the engine (the caller disposes it)
 * @throws {RangeError} for an unknown preset name
 * @throws {CheckpointInvalid} (engine/checkpoint-error.ts) for a checkpoint directory that cannot be loaded
 */
export async function createEngine(spec: EngineSpec): Promise<Engine> {
  if ("checkpoint" in spec) return EmbeddedEngine.load(spec.checkpoint);
  if (typeof spec.model === "string" && !(spec.model in MODEL_PRESETS)) {
    throw new RangeError(`unknown embedded preset "${spec.model}" (known: ${EMBEDDED_PRESETS.join(", ")})`);
  }
  return EmbeddedEngine.create({
    config: spec.model,
    seed: spec.seed,
    ...(spec.positionInit ? { positionInit: spec.positionInit } : {}),
  });
}
