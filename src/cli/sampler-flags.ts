/**
 * @module Who samples the rollouts of `arclight train`: the config's `engine.sampler` (`--sampler` overrides it), and
 * either `engine.vllm_endpoints` (`--vllm-endpoint`, repeatable, replaces them: servers the user runs) or
 * `engine.vllm.launch` (`--vllm-launch`, `--vllm-replicas N`: replicas arclight starts), checked before anything starts.
 */
import type { EngineSpec } from "../run/engine-factory.js";
import type { VllmSampler } from "../run/managed-vllm.js";
import { VLLM_LORA_RANKS } from "../run/vllm-command.js";
import { type TrainerConfig, VllmLaunchSchema } from "../trainer/config.js";
import { CliError } from "./cli-error.js";

/** The sampler flags of `arclight train`. */
export interface SamplerFlags {
  sampler?: string;
  vllmEndpoint?: string[];
  engineUrl?: string;
  /** `--vllm-launch`: start vLLM (engine.vllm.launch, every default when it is null). */
  vllmLaunch?: boolean;
  /** `--vllm-replicas N`: overrides engine.vllm.replicas. */
  vllmReplicas?: string;
  /** `--init-from`: the run starts from other weights than the model's (frozen agents then get their own copy). */
  initFrom?: string;
}

/** Checks one `--vllm-endpoint` value. @throws {CliError} naming the flag */
function checkEndpoint(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--vllm-endpoint ${url}: expected an http(s) URL ending in /v1`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new CliError(`--vllm-endpoint ${url}: expected an http(s) URL ending in /v1`);
  }
  return url;
}

/** `--vllm-replicas`: a positive integer. @throws {CliError} naming the flag */
function replicasOf(flag: string | undefined, configured: number): number {
  if (flag === undefined) return configured;
  const n = Number(flag);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`--vllm-replicas ${flag}: expected a positive integer`);
  return n;
}

/**
 * The managed-vLLM part of a sampler: the launch settings and the model `vllm serve` loads.
 * @throws {CliError} when both launch and endpoints are given, or the model is a `new:NAME` preset
 */
function launchOf(config: Readonly<TrainerConfig>, flags: SamplerFlags, spec: EngineSpec & { kind: "torch" }) {
  const settings = config.engine.vllm.launch ?? (flags.vllmLaunch === true ? VllmLaunchSchema.parse({}) : null);
  if (settings === null) {
    if (flags.vllmReplicas !== undefined)
      throw new CliError("--vllm-replicas: needs --vllm-launch or engine.vllm.launch");
    return null;
  }
  if (flags.vllmEndpoint !== undefined || config.engine.vllm_endpoints.length > 0) {
    throw new CliError(
      "engine.vllm.launch: not with engine.vllm_endpoints / --vllm-endpoint (arclight starts vLLM or uses yours, not both)",
    );
  }
  const replicas = replicasOf(flags.vllmReplicas, config.engine.vllm.replicas);
  if (settings.gpus.length > 0 && settings.gpus.length !== replicas) {
    throw new CliError(`--vllm-replicas ${replicas}: engine.vllm.launch.gpus has ${settings.gpus.length} entries`);
  }
  const model = settings.model ?? spec.model;
  if (model.startsWith("new:")) {
    throw new CliError(
      `engine.vllm.launch: vLLM cannot load ${model} (a randomly initialised preset); set engine.model to a model ` +
        "folder, or engine.vllm.launch.model to what vLLM should load",
    );
  }
  const loraRank = spec.torch.lora?.rank ?? null;
  if (loraRank !== null && loraRank > VLLM_LORA_RANKS.at(-1)!) {
    throw new CliError(`engine.lora.rank ${loraRank}: vLLM serves LoRA ranks up to ${VLLM_LORA_RANKS.at(-1)}`);
  }
  // Frozen agents answer from the replicas' base weights when those are the starting policy: LoRA from engine.model.
  const frozenOnBase =
    loraRank !== null && config.agents.frozen.length > 0 && flags.initFrom === undefined && model === spec.model;
  return { settings, replicas, model, loraRank, frozenModel: frozenOnBase ? config.agents.frozen_model : null };
}

/**
 * The vLLM sampler a config and flags name, or null when the trained engine samples.
 * @param config - the trainer config (its `engine` section)
 * @param flags - `--sampler`, `--vllm-endpoint`, `--vllm-launch`, `--vllm-replicas`, `--engine-url`
 * @param spec - the engine to train (already checked)
 * @returns the vLLM servers (given, or to launch), or null for `sampler: engine`
 * @throws {CliError} naming the flag or key: an unknown sampler; `vllm` without a torch engine, without endpoints or
 *   launch settings, with both, or together with `--engine-url`
 */
export function vllmSamplerOf(
  config: Readonly<TrainerConfig>,
  flags: SamplerFlags,
  spec: EngineSpec,
): VllmSampler | null {
  const sampler = flags.sampler ?? config.engine.sampler;
  if (sampler !== "engine" && sampler !== "vllm") throw new CliError(`--sampler ${sampler}: expected engine or vllm`);
  if (sampler === "engine") return null;
  if (spec.kind !== "torch") {
    throw new CliError("engine.sampler vllm: needs engine.kind torch (vLLM loads the torch worker's weights)");
  }
  if (flags.engineUrl !== undefined) {
    throw new CliError("--engine-url: not with engine.sampler vllm (the vLLM servers answer the rollouts)");
  }
  const weights = spec.torch.lora === null ? "full" : "lora";
  const launch = launchOf(config, flags, spec);
  if (launch !== null) return { endpoints: [], sleep: config.engine.vllm_sleep, weights, launch };
  const endpoints = flags.vllmEndpoint?.map(checkEndpoint) ?? [...config.engine.vllm_endpoints];
  if (endpoints.length === 0) {
    throw new CliError(
      "engine.sampler vllm: needs engine.vllm_endpoints (or --vllm-endpoint URL), e.g. http://h:8000/v1, or " +
        "engine.vllm.launch (or --vllm-launch) to let arclight start vLLM",
    );
  }
  return { endpoints, sleep: config.engine.vllm_sleep, weights, launch: null };
}
