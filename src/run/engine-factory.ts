/** @module The engine factory: an `EngineSpec` names the engine (`embedded` or `torch`), `createEngine` builds it. */
import { MODEL_PRESETS, type ModelConfig, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { PositionInit } from "../engine/embedded/params.js";
import type { Engine } from "../engine/engine.js";
import { openTorchEngine, type TorchEngineConfig } from "../engine/remote/config.js";

/** The embedded CPU engine, fresh weights: a preset name or a model shape, and the weight-init seed. */
export interface EmbeddedFreshSpec {
  kind: "embedded";
  model: ModelPreset | Readonly<ModelConfig>;
  seed: number;
  /** How the position table starts; default the engine's. */
  positionInit?: PositionInit;
  /** Threads per training step (`EmbeddedEngineOptions.trainThreads`); default 1. */
  trainThreads?: number;
  /** Threads that decode (`EmbeddedEngineOptions.decodeThreads`); default 1. */
  decodeThreads?: number;
}

/** The embedded CPU engine loaded from a checkpoint directory (written by `Engine.saveCheckpoint`). */
export interface EmbeddedCheckpointSpec {
  kind: "embedded";
  checkpoint: string;
  /** Threads per training step (`EmbeddedEngineOptions.trainThreads`); default 1. */
  trainThreads?: number;
  /** Threads that decode (`EmbeddedEngineOptions.decodeThreads`); default 1. */
  decodeThreads?: number;
}

/** The torch engine: a Python worker arclight starts (or the running one at `torch.url`). */
export interface TorchSpec {
  kind: "torch";
  /** A local Hugging Face model folder or `new:NAME`. */
  model: string;
  /** Weight-init seed of `new:NAME`. */
  seed: number;
  torch: TorchEngineConfig;
  /** Named LoRA adapters the worker holds (a policy per agent); absent: one. */
  adapters?: readonly string[];
}

/** Which engine to build. */
export type EngineSpec = EmbeddedFreshSpec | EmbeddedCheckpointSpec | TorchSpec;

/** Names of the embedded presets, for messages. */
export const EMBEDDED_PRESETS = Object.keys(MODEL_PRESETS) as ModelPreset[];

/** One line naming the engine a spec builds, e.g. `embedded tiny, 2 training threads`. */
export function describeEngineSpec(spec: EngineSpec): string {
  if (spec.kind === "torch") return `torch ${spec.model}`;
  const threads = spec.trainThreads ?? 1;
  const model =
    "checkpoint" in spec
      ? `checkpoint ${spec.checkpoint}`
      : typeof spec.model === "string"
        ? spec.model
        : "custom shape";
  const decoders = spec.decodeThreads ?? 1;
  const decoding = decoders === 1 ? "" : `, ${decoders} decode threads`;
  return `embedded ${model}, ${threads} training thread${threads === 1 ? "" : "s"}${decoding}`;
}

/** The thread settings an embedded spec sets, as engine options. */
export function threadOptions(spec: EmbeddedFreshSpec | EmbeddedCheckpointSpec): {
  trainThreads?: number;
  decodeThreads?: number;
} {
  return {
    ...(spec.trainThreads === undefined ? {} : { trainThreads: spec.trainThreads }),
    ...(spec.decodeThreads === undefined ? {} : { decodeThreads: spec.decodeThreads }),
  };
}

/**
 * Builds the engine a spec names; the caller disposes it.
 * @throws {RangeError} for an unknown preset; `CheckpointInvalid`; `TorchPackageMissing`
 */
export async function createEngine(spec: EngineSpec): Promise<Engine> {
  if (spec.kind === "torch") return openTorchEngine(spec.model, spec.seed, spec.torch, spec.adapters);
  const threads = threadOptions(spec);
  if ("checkpoint" in spec) return EmbeddedEngine.load(spec.checkpoint, threads);
  if (typeof spec.model === "string" && !(spec.model in MODEL_PRESETS)) {
    throw new RangeError(`unknown embedded preset "${spec.model}" (known: ${EMBEDDED_PRESETS.join(", ")})`);
  }
  return EmbeddedEngine.create({
    config: spec.model,
    seed: spec.seed,
    ...(spec.positionInit ? { positionInit: spec.positionInit } : {}),
    ...threads,
  });
}
