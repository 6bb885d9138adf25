/**
 * @module vLLM as the stack's sampler: servers the user runs (`vllm_endpoints`), or replicas arclight starts
 * (`engine.vllm.launch`, `vllm-replicas.ts`) with the flags the run's mode needs, whose restarts start from the
 * version being served. Either way the weights reach them through `vllmServing` (LoRA adapter or full weights).
 */
import { join } from "node:path";
import type { Logger } from "pino";
import type { VllmLaunch } from "../trainer/config.js";
import type { PolicyServing } from "../trainer/serving.js";
import { vllmServing } from "../trainer/vllm-serving.js";
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
  /** The policy's model name (what the gateway sends). */
  modelName: string;
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
 * @param context - run folder, policy name, logger, stop registration
 * @returns the serving (its endpoints are the replicas' or the user's servers)
 * @throws {VllmSamplerError} when a replica does not start (named, with the tail of its output)
 */
export async function vllmSamplerServing(sampler: VllmSampler, context: VllmStackContext): Promise<PolicyServing> {
  const dir = join(context.runDir, sampler.weights === "full" ? "weights" : "adapters");
  const base = { adapterName: context.modelName, adaptersDir: dir, sleep: sampler.sleep, weights: sampler.weights };
  if (sampler.launch === null) return vllmServing({ ...base, endpoints: sampler.endpoints });
  const { launch } = sampler;
  // What a replica loads when it (re)starts: the base model, then each published version.
  let current: ReplicaWeights = { model: launch.model, adapters: [] };
  const mode: VllmMode = {
    servedModelName: servedBaseName(context.modelName, sampler.weights),
    aliases: launch.frozenModel === null ? [] : [launch.frozenModel],
    lora: launch.loraRank === null ? null : { rank: launch.loraRank, maxLoras: 1 },
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
  const onPublish = (versionDir: string) => {
    current =
      sampler.weights === "full"
        ? { model: versionDir, adapters: [] }
        : { model: launch.model, adapters: [{ name: context.modelName, path: versionDir }] };
  };
  return vllmServing({ ...base, endpoints: replicas.endpoints, ready: () => replicas.ready(), onPublish });
}
