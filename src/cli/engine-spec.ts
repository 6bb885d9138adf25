/**
 * @module The engine a training command builds, from its config's `engine` section and the `--engine`, `--preset`
 * and `--engine-seed` flags (`arclight train` and `arclight sft` read them the same way).
 */
import type { ModelPreset } from "../engine/embedded/config.js";
import { EMBEDDED_PRESETS, type EngineSpec } from "../run/engine-factory.js";
import type { TrainerConfig } from "../trainer/config.js";
import { CliError } from "./cli-error.js";
import { seedFlag } from "./common-flags.js";

/** Keys of the trainer's engine section that choose the sampler, not the trained engine. */
type SamplerKey = "sampler" | "vllm_endpoints" | "vllm_sleep" | "vllm";

/** An `engine` config section: the trainer's, or `arclight sft`'s (which has no sampler keys). */
export type TrainedEngineSection = Omit<TrainerConfig["engine"], SamplerKey>;

/** The engine flags of a training command. */
export interface EngineFlags {
  /** Overrides the config's `engine.kind`. */
  engine?: string;
  preset: string;
  engineSeed: string;
}

/**
 * The engine to train: the config's `engine` section (`--engine` overrides its kind) — a torch worker, or a fresh
 * embedded preset with a seed. Checked before anything is started or written.
 * @param section - the config's `engine` section
 * @param flags - `--engine`, `--preset`, `--engine-seed`
 * @returns the engine spec
 * @throws {CliError} naming --engine, --preset or --engine-seed, or `engine.train_threads` or
 *   `engine.decode_threads` above 1 with torch
 */
export function engineSpecOf(section: TrainedEngineSection, flags: EngineFlags): EngineSpec {
  const kind = flags.engine ?? section.kind;
  if (kind !== "embedded" && kind !== "torch") throw new CliError(`--engine ${kind}: expected embedded or torch`);
  const seed = seedFlag("--engine-seed", String(flags.engineSeed));
  if (kind === "torch") {
    const torchFrom = flags.engine === "torch" ? "--engine torch" : "engine.kind torch";
    if (section.train_threads !== 1) {
      throw new CliError(
        `engine.train_threads ${section.train_threads} with ${torchFrom}: train_threads is the embedded engine's ` +
          "setting; the torch engine trains with PyTorch's own threads (leave it at 1)",
      );
    }
    if (section.decode_threads !== 1) {
      throw new CliError(
        `engine.decode_threads ${section.decode_threads} with ${torchFrom}: decode_threads is the embedded engine's ` +
          "setting; the torch engine samples with PyTorch's own threads or vLLM (leave it at 1)",
      );
    }
    // The sampler keys (trainer config only) say who samples, not how the torch worker runs.
    const {
      kind: _kind,
      model,
      seed: configSeed,
      train_threads: _threads,
      decode_threads: _decoders,
      ...rest
    } = section;
    const {
      sampler: _s,
      vllm_endpoints: _e,
      vllm_sleep: _z,
      vllm: _v,
      ...torch
    } = rest as typeof rest & Partial<Record<SamplerKey, unknown>>;
    const torchSeed = flags.engineSeed === "0" ? configSeed : seed;
    return { kind: "torch", model: model ?? "new:qwen2-tiny", seed: torchSeed, torch };
  }
  if (!EMBEDDED_PRESETS.includes(flags.preset as ModelPreset)) {
    throw new CliError(`--preset ${flags.preset}: expected one of ${EMBEDDED_PRESETS.join(", ")}`);
  }
  return {
    kind: "embedded",
    model: flags.preset as ModelPreset,
    seed,
    trainThreads: section.train_threads,
    decodeThreads: section.decode_threads,
  };
}
