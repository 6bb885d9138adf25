/**
 * @module vLLM servers as the sampler: after each update the trainer's worker writes the new weights to
 * `adaptersDir/vVERSION` and every vLLM loads them at runtime. LoRA: `POST /v1/load_lora_adapter {lora_name,
 * lora_path, load_inplace: true}` under each policy's model name, so the gateway keeps sending `model: NAME` and vLLM
 * answers with the new adapter. Several policies (a policy per agent) are several adapters on the one base, each in
 * `adaptersDir/vVERSION/NAME` and loaded under its own name. Full weights (a Hugging Face folder, config.json +
 * safetensors; one policy only): `POST /collective_rpc` with `update_config` `{"model_config": {"model": FOLDER}}`,
 * then with `reload_weights` (the two worker calls of vLLM's example
 * `offline_inference/skip_loading_weights_in_engine_init.py`, over the dev-mode HTTP route), then
 * `POST /reset_prefix_cache` so no KV block computed by the old weights is reused. Collocated (`sleep`), vLLM is put
 * to sleep around each update (`POST /sleep?level=1`) and woken before the new weights are loaded
 * (`POST /wake_up`), so the worker has the accelerator's memory while it trains.
 *
 * Why versions stay exact: the trainer calls `publish` while the gateway proxy is paused and drained, and registers
 * the endpoints with the new version only after every server answered 200 for every policy, so no call is answered by
 * one adapter and recorded with another's version.
 * @see https://docs.vllm.ai/en/latest/features/lora.html (dynamic LoRA serving; VLLM_ALLOW_RUNTIME_LORA_UPDATING)
 * @see https://docs.vllm.ai/en/latest/features/sleep_mode.html (VLLM_SERVER_DEV_MODE=1, --enable-sleep-mode)
 * @see https://docs.vllm.ai/en/latest/examples/offline_inference/skip_loading_weights_in_engine_init.html
 */
import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { request } from "undici";
import type { PolicyServing, ServedPolicy } from "./serving.js";

/** A vLLM server refused or did not answer a LoRA or sleep call. */
export class VllmSamplerError extends Error {
  /** The class name, for logs. */
  override readonly name = "VllmSamplerError";
}

/** What {@link vllmServing} needs. */
export interface VllmServingOptions {
  /** vLLM base URLs ending in `/v1` (registered with the gateway as the policy's endpoints). */
  endpoints: readonly string[];
  /** Where adapters are written, e.g. `runs/NAME/adapters`; vLLM must see the same path. */
  adaptersDir: string;
  /** Collocated: sleep every server (level 1) around each update. */
  sleep: boolean;
  /** lora (default): load the adapter; full: reload every weight from the saved folder. */
  weights?: "lora" | "full";
  /** Waits until every server can take calls (managed replicas being restarted); default: they always can. */
  ready?: () => Promise<void>;
  /**
   * Told each version's folders before the servers load them, so a server restarted from then on starts with them.
   * @param version - the version being published
   */
  onPublish?: (version: PublishedVersion) => void;
}

/** The folders of one published version, as a server (re)started from it loads them. */
export interface PublishedVersion {
  /** Full weights: the model folder to serve; absent for LoRA (the base model stays). */
  model?: string;
  /** LoRA: each policy's adapter, named by its model name (`--lora-modules NAME=PATH`); empty for full weights. */
  adapters: { name: string; path: string }[];
}

/** What the server was started without when a route answers 404 `{"detail":"Not Found"}`. */
const MISSING_SETTING: Record<string, string> = {
  "/load_lora_adapter": "start vLLM with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True",
  "/sleep": "start vLLM with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1",
  "/wake_up": "start vLLM with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1",
  "/collective_rpc": "start vLLM with VLLM_SERVER_DEV_MODE=1",
  "/reset_prefix_cache": "start vLLM with VLLM_SERVER_DEV_MODE=1",
};

/** The server root of a `/v1` base URL (the sleep routes have no `/v1`). */
function rootOf(endpoint: string): string {
  return endpoint.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/**
 * One POST to a vLLM server.
 * @throws {VllmSamplerError} on a transport error or a non-2xx answer (vLLM's error message and a hint when the route
 *   is missing)
 */
async function post(base: string, route: string, body?: unknown): Promise<void> {
  const url = `${base}${route}`;
  let status: number;
  let text: string;
  try {
    const response = await request(url, {
      method: "POST",
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (err) {
    throw new VllmSamplerError(`vLLM ${url}: unreachable (${(err as Error).message})`, { cause: err });
  }
  if (status < 300) return;
  const path = route.split("?", 1)[0]!;
  const hint = status === 404 && text.includes('"Not Found"') ? ` (${MISSING_SETTING[path] ?? "no such route"})` : "";
  throw new VllmSamplerError(`vLLM ${url} answered ${status}: ${errorMessage(text)}${hint}`);
}

/** vLLM's error message (`{"error": {"message"}}`, FastAPI's `{"detail"}`), else the body as it came. */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown }; detail?: unknown };
    if (typeof body.error?.message === "string") return body.error.message;
    if (body.detail !== undefined) return JSON.stringify(body.detail);
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

/** The calls that make one server answer with every folder of `version`. */
async function loadInto(endpoint: string, version: PublishedVersion): Promise<void> {
  if (version.model === undefined) {
    for (const adapter of version.adapters) {
      const load = { lora_name: adapter.name, lora_path: adapter.path, load_inplace: true };
      await post(endpoint.replace(/\/+$/, ""), "/load_lora_adapter", load);
    }
    return;
  }
  const root = rootOf(endpoint);
  await post(root, "/collective_rpc", { method: "update_config", args: [{ model_config: { model: version.model } }] });
  await post(root, "/collective_rpc", { method: "reload_weights" });
  await post(root, "/reset_prefix_cache");
}

/**
 * Loads `version` into every server. A managed server that cannot be reached is waited for (it is being restarted,
 * and starts from `version`, told by `onPublish`) and loaded once more, so no server is left on an older version.
 */
async function loadAll(version: PublishedVersion, options: VllmServingOptions): Promise<void> {
  for (const endpoint of options.endpoints) {
    try {
      await loadInto(endpoint, version);
    } catch (err) {
      if (options.ready === undefined || !(err instanceof VllmSamplerError) || !err.message.includes("unreachable")) {
        throw err;
      }
      await options.ready();
      await loadInto(endpoint, version);
    }
  }
}

/**
 * Where each policy of a version is saved: one policy in the version folder itself, several each in
 * `VERSION/NAME`.
 * @throws {VllmSamplerError} for no policy, a repeated name, a name that is not one folder name, or several policies
 *   with full weights
 */
function policyDirs(policies: readonly ServedPolicy[], versionDir: string, full: boolean): string[] {
  if (policies.length === 0) throw new VllmSamplerError("publish needs a policy");
  if (policies.length === 1) return [versionDir];
  const names = policies.map((p) => p.modelName);
  if (full) {
    throw new VllmSamplerError(
      `a policy per agent (${names.join(", ")}) needs LoRA adapters on one base, not full-weight reloads`,
    );
  }
  const repeated = names.find((name, i) => names.indexOf(name) !== i);
  if (repeated !== undefined) throw new VllmSamplerError(`policy model name ${repeated} is given twice`);
  const bad = names.find((name) => name === "" || name === "." || name === ".." || /[/\\]/.test(name));
  if (bad !== undefined) throw new VllmSamplerError(`policy model name "${bad}" cannot name an adapter folder`);
  return names.map((name) => join(versionDir, name));
}

/**
 * Serving by vLLM servers that hot-load each version (a LoRA adapter or full weights; collocated, asleep around
 * each update).
 * @param options - endpoints, weights folder, collocated sleep, LoRA or full, managed-replica hooks
 * @returns the serving; `publish` loads each policy under its model name, and throws {@link VllmSamplerError} when a
 *   server refuses the weights or a wake-up, or for several policies with full weights
 */
export function vllmServing(options: VllmServingOptions): PolicyServing {
  const asleep = new Set<string>();
  const wakeAll = async () => {
    for (const endpoint of [...asleep]) {
      await post(rootOf(endpoint), "/wake_up");
      asleep.delete(endpoint);
    }
  };
  let previousDir: string | null = null;
  return {
    endpoints: options.endpoints,
    async publish(policies: readonly ServedPolicy[], policyVersion: number) {
      const dir = resolve(options.adaptersDir, `v${policyVersion}`);
      const full = options.weights === "full";
      const dirs = policyDirs(policies, dir, full);
      for (const [i, policy] of policies.entries()) await policy.engine.saveCheckpoint(dirs[i]!);
      const version: PublishedVersion = full
        ? { model: dir, adapters: [] }
        : { adapters: policies.map((policy, i) => ({ name: policy.modelName, path: dirs[i]! })) };
      options.onPublish?.(version);
      await options.ready?.();
      // 1. wake (a sleeping vLLM has no weights on the accelerator to load into), 2. load every policy.
      await wakeAll();
      await loadAll(version, options);
      // vLLM holds the loaded weights in memory: the older folder is no longer read.
      if (previousDir !== null && previousDir !== dir) await rm(previousDir, { recursive: true, force: true });
      previousDir = dir;
    },
    async aroundUpdate<T>(update: () => Promise<T>): Promise<T> {
      if (!options.sleep) return update();
      // Woken on every way out: by publish after a real update, here after a skipped or failed one (or a failed sleep).
      try {
        await options.ready?.();
        for (const endpoint of options.endpoints) {
          await post(rootOf(endpoint), "/sleep?level=1");
          asleep.add(endpoint);
        }
        return await update();
      } finally {
        await wakeAll();
      }
    },
  };
}
