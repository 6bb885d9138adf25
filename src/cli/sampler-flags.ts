/**
 * @module Who samples the rollouts of `arclight train`: the config's `engine.sampler` (`--sampler` overrides it) and
 * `engine.vllm_endpoints` (`--vllm-endpoint`, repeatable, replaces them), checked before anything starts.
 */
import type { EngineSpec } from "../run/engine-factory.js";
import type { TrainerConfig } from "../trainer/config.js";
import { CliError } from "./cli-error.js";

/** The sampler flags of `arclight train`. */
export interface SamplerFlags {
  sampler?: string;
  vllmEndpoint?: string[];
  engineUrl?: string;
}

/** vLLM servers to sample from: their `/v1` base URLs and whether they sleep around updates. */
export interface VllmSampler {
  endpoints: string[];
  sleep: boolean;
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

/**
 * The vLLM sampler a config and flags name, or null when the trained engine samples.
 * @param config - the trainer config (its `engine` section)
 * @param flags - `--sampler`, `--vllm-endpoint`, `--engine-url`
 * @param spec - the engine to train (already checked)
 * @returns the vLLM servers, or null for `sampler: engine`
 * @throws {CliError} naming the flag or key: an unknown sampler; `vllm` without a torch engine with LoRA, without
 *   endpoints, or together with `--engine-url`
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
    throw new CliError("engine.sampler vllm: needs engine.kind torch (vLLM loads the torch worker's LoRA adapters)");
  }
  if (spec.torch.lora === null) {
    throw new CliError(
      "engine.sampler vllm: needs engine.lora (vLLM hot-loads LoRA adapters; a full fine-tune samples from the " +
        "torch engine itself, sampler: engine; see docs/torch-engine.md)",
    );
  }
  const endpoints = flags.vllmEndpoint?.map(checkEndpoint) ?? [...config.engine.vllm_endpoints];
  if (endpoints.length === 0) {
    throw new CliError(
      "engine.sampler vllm: needs engine.vllm_endpoints (or --vllm-endpoint URL), e.g. http://h:8000/v1",
    );
  }
  if (flags.engineUrl !== undefined) {
    throw new CliError("--engine-url: not with engine.sampler vllm (the vLLM servers answer the rollouts)");
  }
  return { endpoints, sleep: config.engine.vllm_sleep };
}
