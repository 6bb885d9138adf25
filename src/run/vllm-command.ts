/**
 * @module The command line and environment of one managed vLLM replica: `COMMAND serve MODEL` with the flags the run's
 * mode needs (LoRA, sleep, full-weight reloads), the port, the GPUs, and, for a replica started after an update, the
 * weights of the current policy version, so a restarted replica answers with the version the gateway has registered.
 *
 * Flags and variables, as vLLM documents them (`vllm serve --help`; docs.vllm.ai features/lora, features/sleep_mode):
 * `--served-model-name`, `--host`, `--port`, `--max-logprobs`; LoRA: `--enable-lora`, `--max-lora-rank` (one of
 * 1, 8, 16, 32, 64, 128, 256, 320, 512: vLLM's `MaxLoRARanks`), `--max-loras`, `--lora-modules NAME=PATH`,
 * `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` (the `/v1/load_lora_adapter` routes); sleep: `--enable-sleep-mode`;
 * `VLLM_SERVER_DEV_MODE=1` mounts `/sleep`, `/wake_up` and `/collective_rpc`.
 */
import type { VllmLaunch } from "../trainer/config.js";

/** The ranks vLLM accepts for `--max-lora-rank` (`vllm/config/lora.py` `MaxLoRARanks`). */
export const VLLM_LORA_RANKS = [1, 8, 16, 32, 64, 128, 256, 320, 512] as const;

/** What the run needs from every replica. */
export interface VllmMode {
  /** `--served-model-name`: the name the base weights answer to. */
  servedModelName: string;
  /** More names the base weights answer to (after the first; e.g. the frozen agents' model); default none. */
  aliases?: readonly string[];
  /** LoRA adapters (largest rank, adapters loaded at once); null: full weights, reloaded over `/collective_rpc`. */
  lora: { rank: number; maxLoras: number } | null;
  /** Collocated with the trainer: sleep mode on. */
  sleep: boolean;
}

/** The weights a replica starts with: the base model, and each adapter already published (name and folder). */
export interface ReplicaWeights {
  model: string;
  adapters: readonly { name: string; path: string }[];
}

/** A replica's process: executable, arguments and the environment added to arclight's. */
export interface ReplicaCommand {
  argv: string[];
  env: Record<string, string>;
}

/**
 * The smallest rank vLLM accepts that holds `rank`.
 * @throws {RangeError} above vLLM's largest (512)
 */
export function vllmLoraRank(rank: number): number {
  const fit = VLLM_LORA_RANKS.find((r) => r >= rank);
  if (fit === undefined) throw new RangeError(`LoRA rank ${rank}: vLLM serves ranks up to 512`);
  return fit;
}

/**
 * The command of replica `index`.
 * @param launch - `engine.vllm.launch`
 * @param mode - what the run needs (LoRA or full weights, sleep, served name)
 * @param weights - what the replica loads at start (the current policy version's)
 * @param index - replica number (picks `launch.gpus[index]`)
 * @param port - the port it listens on
 * @returns argv (`launch.args` last, so a user's flag can override one of ours) and the added environment
 */
export function replicaCommand(
  launch: VllmLaunch,
  mode: VllmMode,
  weights: ReplicaWeights,
  index: number,
  port: number,
): ReplicaCommand {
  const names = [mode.servedModelName, ...(mode.aliases ?? [])];
  const argv = [launch.command, "serve", weights.model, "--served-model-name", ...names];
  argv.push("--host", launch.host, "--port", String(port), "--max-logprobs", String(launch.max_logprobs));
  // The dev routes: /sleep and /wake_up (collocated), /collective_rpc (full-weight reloads).
  const env: Record<string, string> = { VLLM_SERVER_DEV_MODE: "1" };
  if (mode.lora !== null) {
    argv.push("--enable-lora", "--max-lora-rank", String(vllmLoraRank(mode.lora.rank)));
    argv.push("--max-loras", String(mode.lora.maxLoras));
    for (const adapter of weights.adapters) argv.push("--lora-modules", `${adapter.name}=${adapter.path}`);
    env.VLLM_ALLOW_RUNTIME_LORA_UPDATING = "True";
  }
  if (mode.sleep) argv.push("--enable-sleep-mode");
  argv.push(...launch.args);
  const gpus = launch.gpus[index];
  if (gpus !== undefined) env.CUDA_VISIBLE_DEVICES = gpus;
  return { argv, env: { ...env, ...launch.env } };
}
