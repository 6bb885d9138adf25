/**
 * @module vLLM as the stack's sampler: servers the user runs (`vllm_endpoints`), or replicas arclight starts
 * (`engine.vllm.launch`, `vllm-replicas.ts`) with the flags the run's mode needs, whose restarts start from the
 * version being served. Either way the weights reach them through `vllmServing` (LoRA adapter or full weights).
 */
import { join } from "node:path";
import type { Logger } from "pino";
import type { VllmLaunch } from "../trainer/config.js";
import type { PolicyServing } from "../trainer/serving.js";
import { type PublishedVersion, VllmSamplerError, vllmServing } from "../trainer/vllm-serving.js";
import { type ReplicaWeights, replicaCommand, type VllmMode } from "./vllm-command.js";
import { VllmReplicas } from "./vllm-replicas.js";

/** vLLM as the sampler, as the CLI resolved it. */
export interface VllmSampler {
  /** The servers the user runs (`/v1` URLs); empty when `launch` is set. */
  endpoints: string[];
  /** Collocated: asleep around each update. */
  sleep: boolean;
  /** What each update hands vLLM: a LoRA adapter, or every weight. */
  weights: "lora" | "full";
  /** Replicas to start; null: use `endpoints`. */
  launch: {
    settings: VllmLaunch;
    replicas: number;
    /** What `vllm serve` loads first (a folder or a Hugging Face id). */
    model: string;
    /** The trained adapter's rank (LoRA), else null. */
    loraRank: number | null;
    /**
     * The frozen agents' model name, served by the replicas' base weights (a LoRA run's starting policy: the base
     * model with zero adapter updates), so frozen agents need no second copy of the weights; null: none.
     */
    frozenModel: string | null;
  } | null;
}

/** Where and as whom the stack serves the policy. */
export interface VllmStackContext {
  runDir: string;
  /** The policy's model name (what the gateway sends); with a policy per agent, the run's name (base: `NAME-base`). */
  modelName: string;
  /**
   * The model names of the trained policies, one LoRA adapter each (a policy per agent); default `[modelName]` (one
   * policy shared by every agent). Replicas hold this many adapters at once (`--max-loras`).
   */
  policyModels?: readonly string[];
  /** More names the base weights answer (a policy per agent: the run's model name and the frozen model); default none. */
  baseAliases?: readonly string[];
  logger: Logger;
  /** Registers a stop with the stack (run newest first on every exit path). */
  addStop: (stop: () => Promise<void>) => void;
  /** The stack's interrupt: stops replicas still starting. */
  signal?: AbortSignal;
}

/**
 * The name vLLM serves the base weights under: the policy's own name with full weights (the reloaded weights are the
 * policy), else `NAME-base`, so the adapter alone answers to the policy's name.
 */
export function servedBaseName(modelName: string, weights: "lora" | "full"): string {
  return weights === "full" ? modelName : `${modelName}-base`;
}

/**
 * The policy serving over vLLM: starts the replicas first when `sampler.launch` is set (stopped with the stack).
 * @param sampler - the resolved sampler
 * @param context - run folder, policy names, logger, stop registration
 * @returns the serving (its endpoints are the replicas' or the user's servers)
 * @throws {VllmSamplerError} when a replica does not start (named, with the tail of its output), or for several
 *   policies with full weights
 */
export async function vllmSamplerServing(sampler: VllmSampler, context: VllmStackContext): Promise<PolicyServing> {
  const policyModels = context.policyModels ?? [context.modelName];
  if (sampler.weights === "full" && policyModels.length > 1) {
    // Refused before any replica starts: vLLM reloads full weights for one model only.
    throw new VllmSamplerError(
      `a policy per agent (${policyModels.join(", ")}) needs LoRA adapters on one base, not full-weight reloads`,
    );
  }
  const dir = join(context.runDir, sampler.weights === "full" ? "weights" : "adapters");
  const base = { adaptersDir: dir, sleep: sampler.sleep, weights: sampler.weights };
  if (sampler.launch === null) return vllmServing({ ...base, endpoints: sampler.endpoints });
  const { launch } = sampler;
  // What a replica loads when it (re)starts: the base model, then each published version.
  let current: ReplicaWeights = { model: launch.model, adapters: [] };
  const maxLoras = Math.max(1, policyModels.length);
  const mode: VllmMode = {
    servedModelName: servedBaseName(context.modelName, sampler.weights),
    aliases: [
      ...new Set([...(context.baseAliases ?? []), ...(launch.frozenModel === null ? [] : [launch.frozenModel])]),
    ],
    lora: launch.loraRank === null ? null : { rank: launch.loraRank, maxLoras },
    sleep: sampler.sleep,
  };
  const replicas = await VllmReplicas.start({
    launch: launch.settings,
    replicas: launch.replicas,
    command: (index, port) => replicaCommand(launch.settings, mode, current, index, port),
    logger: context.logger.child({ component: "vllm" }),
    logDir: context.runDir,
    ...(context.signal !== undefined ? { signal: context.signal } : {}),
  });
  context.addStop(() => replicas.stop());
  // A replica restarted from now on starts with this version: its full weights, or every policy's adapter.
  const onPublish = (version: PublishedVersion) => {
    current = { model: version.model ?? launch.model, adapters: version.adapters };
  };
  return vllmServing({ ...base, endpoints: replicas.endpoints, ready: () => replicas.ready(), onPublish });
}
