/**
 * @module vLLM servers as the sampler: after each update the trainer's worker writes the new weights to
 * `adaptersDir/vVERSION` and every vLLM loads them at runtime. LoRA: `POST /v1/load_lora_adapter {lora_name,
 * lora_path, load_inplace: true}` under the policy's model name, so the gateway keeps sending `model: NAME` and vLLM
 * answers with the new adapter. Full weights (a Hugging Face folder, config.json + safetensors): `POST /collective_rpc`
 * with `update_config` `{"model_config": {"model": FOLDER}}`, then with `reload_weights` (the two worker calls of
 * vLLM's example `offline_inference/skip_loading_weights_in_engine_init.py`, over the dev-mode HTTP route), then
 * `POST /reset_prefix_cache` so no KV block computed by the old weights is reused. Collocated (`sleep`), vLLM is put
 * to sleep around each update (`POST /sleep?level=1`) and woken before the new weights are loaded
 * (`POST /wake_up`), so the worker has the accelerator's memory while it trains.
 *
 * Why versions stay exact: the trainer calls `publish` while the gateway proxy is paused and drained, and registers
 * the endpoints with the new version only after every server answered 200, so no call is answered by one adapter and
 * recorded with another's version.
 * @see https://docs.vllm.ai/en/latest/features/lora.html (dynamic LoRA serving; VLLM_ALLOW_RUNTIME_LORA_UPDATING)
 * @see https://docs.vllm.ai/en/latest/features/sleep_mode.html (VLLM_SERVER_DEV_MODE=1, --enable-sleep-mode)
 * @see https://docs.vllm.ai/en/latest/examples/offline_inference/skip_loading_weights_in_engine_init.html
 */
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import { request } from "undici";
import type { Engine } from "../engine/engine.js";
import type { PolicyServing } from "./serving.js";

/** A vLLM server refused or did not answer a LoRA or sleep call. */
export class VllmSamplerError extends Error {
  /** The class name, for logs. */
  override readonly name = "VllmSamplerError";
}

/** What {@link vllmServing} needs. */
export interface VllmServingOptions {
  /** vLLM base URLs ending in `/v1` (registered with the gateway as the policy's endpoints). */
  endpoints: readonly string[];
  /** The adapter name: the model name the gateway proxy sends (e.g. "policy"). */
  adapterName: string;
  /** Where adapters are written, e.g. `runs/NAME/adapters`; vLLM must see the same path. */
  adaptersDir: string;
  /** Collocated: sleep every server (level 1) around each update. */
  sleep: boolean;
  /** lora (default): load the adapter; full: reload every weight from the saved folder. */
  weights?: "lora" | "full";
  /** Waits until every server can take calls (managed replicas being restarted); default: they always can. */
  ready?: () => Promise<void>;
  /**
   * Told each version's folder before the servers load it, so a server restarted from then on starts with it.
   * @param dir - the folder of the version being published
   */
  onPublish?: (dir: string) => void;
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

/** The calls that make one server answer with the weights in `dir`. */
async function loadInto(endpoint: string, dir: string, options: VllmServingOptions): Promise<void> {
  if (options.weights !== "full") {
    const load = { lora_name: options.adapterName, lora_path: dir, load_inplace: true };
    await post(endpoint.replace(/\/+$/, ""), "/load_lora_adapter", load);
    return;
  }
  const root = rootOf(endpoint);
  await post(root, "/collective_rpc", { method: "update_config", args: [{ model_config: { model: dir } }] });
  await post(root, "/collective_rpc", { method: "reload_weights" });
  await post(root, "/reset_prefix_cache");
}

/**
 * Loads `dir` into every server. A managed server that cannot be reached is waited for (it is being restarted, and
 * starts from `dir`, told by `onPublish`) and loaded once more, so no server is left on an older version.
 */
async function loadAll(dir: string, options: VllmServingOptions): Promise<void> {
  for (const endpoint of options.endpoints) {
    try {
      await loadInto(endpoint, dir, options);
    } catch (err) {
      if (options.ready === undefined || !(err instanceof VllmSamplerError) || !err.message.includes("unreachable")) {
        throw err;
      }
      await options.ready();
      await loadInto(endpoint, dir, options);
    }
  }
}

/**
 * Serving by vLLM servers that hot-load each version (a LoRA adapter or full weights; collocated, asleep around
 * each update).
 * @param options - endpoints, adapter name, weights folder, collocated sleep, LoRA or full, managed-replica hooks
 * @returns the serving; `publish` throws {@link VllmSamplerError} when a server refuses the weights or a wake-up
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
    async publish(engine: Engine, policyVersion: number) {
      const dir = resolve(options.adaptersDir, `v${policyVersion}`);
      await engine.saveCheckpoint(dir);
      options.onPublish?.(dir);
      await options.ready?.();
      // 1. wake (a sleeping vLLM has no weights on the accelerator to load into), 2. load.
      await wakeAll();
      await loadAll(dir, options);
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
