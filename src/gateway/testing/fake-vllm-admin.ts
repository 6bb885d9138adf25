/**
 * @module The fake vLLM's model registry and sleep state: the runtime LoRA routes, the sleep-mode routes and the
 * model-name check, answering exactly as vLLM does (status, body, content type).
 *
 * vLLM facts (vLLM v0.19; `serve/lora/api_router.py`, `openai/models/serving.py`, `serve/sleep/api_router.py`):
 * - `POST /v1/load_lora_adapter {lora_name, lora_path, load_inplace?}` (only with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)
 *   answers 200 with the plain-text body `Success: LoRA adapter 'NAME' added successfully.` (no content type). A name
 *   already loaded without `load_inplace: true` is 400 `InvalidUserInput` "The lora adapter 'NAME' has already been
 *   loaded. If you want to load the adapter in place, set 'load_inplace' to True."; a missing name or path is 400
 *   "Both 'lora_name' and 'lora_path' must be provided."; a folder without an adapter is 404 `NotFoundError`
 *   "Loading lora NAME failed: No adapter found for PATH". `load_inplace` keeps the adapter's id and swaps its weights.
 * - `POST /v1/unload_lora_adapter {lora_name}`: 200 `Success: LoRA adapter 'NAME' removed successfully.`; unknown
 *   name 404 `NotFoundError` "The lora adapter 'NAME' cannot be found.".
 * - `POST /sleep?level=N`, `POST /wake_up`: 200 with an empty body; `GET /is_sleeping`: `{"is_sleeping": bool}`
 *   (only with VLLM_SERVER_DEV_MODE=1 and `--enable-sleep-mode`).
 * - `POST /collective_rpc {method, args?, kwargs?, timeout?}` (VLLM_SERVER_DEV_MODE=1; `serve/rpc/api_router.py`)
 *   calls `method` on every worker and answers 200 `{"results": [r, …]}`, one entry per worker (`null` for a method
 *   returning nothing); no `method` is 400 `{"detail": "Missing 'method' in request body"}`. The worker methods used
 *   for a full-weight reload (vLLM's example `offline_inference/skip_loading_weights_in_engine_init.py`):
 *   `update_config` with `[{"model_config": {"model": PATH}}]` (only `load_config` and `model_config` may be
 *   overridden) and `reload_weights`, which reads the safetensors of `model_config.model` into the running model.
 *   A method the worker lacks, or a reload from a folder without safetensors, fails in the worker; the fake answers 500
 *   with vLLM's error body (the message text is the fake's).
 * - `POST /reset_prefix_cache` (dev mode): 200, empty body.
 * - A completion naming a model that is neither the served base model nor a loaded adapter: 404
 *   `{"error": {"message": "The model `NAME` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}`.
 * Error bodies are `{"error": {message, type, param, code}}` (ErrorResponse/ErrorInfo).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { errorBody } from "./fake-vllm-shapes.js";

/** An answer of an admin route: status, body text, content type (null: none, as Starlette's bare `Response`). */
export interface AdminAnswer {
  status: number;
  text: string;
  contentType: string | null;
}

/** One admin call, in arrival order (for tests asserting the order of loads, sleeps and wakes). */
export interface AdminCall {
  path: string;
  /** The body (JSON) or the query (`level`) the call carried. */
  args: Record<string, unknown>;
  status: number;
}

const json = (status: number, body: unknown): AdminAnswer => ({
  status,
  text: JSON.stringify(body),
  contentType: "application/json",
});
const plain = (text: string): AdminAnswer => ({ status: 200, text, contentType: null });

/**
 * Which admin routes a fake vLLM mounts and what it was started with, as `vllm serve` flags and environment decide
 * (omitted: everything on, for fakes that stand in for a vLLM the user started correctly).
 */
export interface FakeVllmServerFlags {
  /** VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and `--enable-lora`: the runtime LoRA routes. */
  runtimeLora: boolean;
  /** `--max-lora-rank` (vLLM's default 16). */
  maxLoraRank: number;
  /** VLLM_SERVER_DEV_MODE=1: `/sleep`, `/wake_up`, `/is_sleeping`, `/collective_rpc`, `/reset_prefix_cache`. */
  devMode: boolean;
  /** `--enable-sleep-mode`. */
  sleepMode: boolean;
  /** The model folder `vllm serve` loaded (the weights answered with until a reload). */
  model: string | null;
  /** `--lora-modules NAME=PATH`: adapters loaded at start. */
  loraModules: readonly { name: string; path: string }[];
  /** Further `--served-model-name` values: more names of the base weights. */
  aliases?: readonly string[];
}

const DEV_ROUTES = ["/sleep", "/wake_up", "/is_sleeping", "/collective_rpc", "/reset_prefix_cache"];
const LORA_ROUTES = ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"];

/** Loaded adapters and the sleep state of one fake vLLM. */
export class FakeVllmAdmin {
  /** Adapter name to the folder it was loaded from. */
  readonly adapters = new Map<string, string>();
  /** The folder the base weights were last loaded from (`--model` or a `reload_weights`). */
  weightsPath: string | null;
  /** Worker config overridden by `update_config`, applied by the next `reload_weights`. */
  private pendingModel: string | null = null;
  /** Every admin call, in arrival order. */
  readonly calls: AdminCall[] = [];
  /** Whether `POST /sleep` came after the last `POST /wake_up`. */
  sleeping = false;
  /** The level of the current sleep (0 awake). */
  sleepLevel = 0;

  /**
   * @param baseModel - the served model name; null accepts every model name (the fake's default)
   * @param flags - the routes mounted and the start weights; omitted: every route, no start weights
   */
  constructor(
    readonly baseModel: string | null,
    readonly flags?: FakeVllmServerFlags,
  ) {
    this.weightsPath = flags?.model ?? null;
    for (const { name, path } of flags?.loraModules ?? []) this.adapters.set(name, path);
  }

  /** Whether `path` is one of the admin routes this server mounts. */
  handles(path: string): boolean {
    if (LORA_ROUTES.includes(path)) return this.flags?.runtimeLora ?? true;
    if (DEV_ROUTES.includes(path)) return this.flags?.devMode ?? true;
    return false;
  }

  /**
   * Answers an admin route.
   * @param path - the route
   * @param query - the URL's query
   * @param body - the parsed JSON body ({} for none)
   */
  handle(path: string, query: URLSearchParams, body: Record<string, unknown>): AdminAnswer {
    const answer = this.answer(path, query, body);
    const args =
      path === "/sleep" ? { level: Number(query.get("level") ?? "1") } : path === "/reset_prefix_cache" ? {} : body;
    this.calls.push({ path, args, status: answer.status });
    return answer;
  }

  /**
   * The 404 vLLM gives a completion for an unknown model, or null when the name is served.
   * @param model - the request's `model`
   */
  modelError(model: unknown): AdminAnswer | null {
    if (this.baseModel === null || model === this.baseModel) return null;
    if (typeof model === "string" && this.flags?.aliases?.includes(model)) return null;
    if (typeof model === "string" && this.adapters.has(model)) return null;
    const error = { message: `The model \`${String(model)}\` does not exist.`, type: "NotFoundError" };
    return json(404, { error: { ...error, param: "model", code: 404 } });
  }

  private answer(path: string, query: URLSearchParams, body: Record<string, unknown>): AdminAnswer {
    if (path === "/v1/load_lora_adapter") return this.load(body);
    if (path === "/v1/unload_lora_adapter") return this.unload(body);
    if (path === "/collective_rpc") return this.collectiveRpc(body);
    if (path === "/reset_prefix_cache") return plain("");
    if ((path === "/sleep" || path === "/wake_up") && this.flags !== undefined && !this.flags.sleepMode) {
      return json(
        500,
        errorBody("Sleep mode is not enabled (start vLLM with --enable-sleep-mode)", "InternalServerError", 500),
      );
    }
    if (path === "/sleep") {
      this.sleeping = true;
      this.sleepLevel = Number(query.get("level") ?? "1");
      return plain("");
    }
    if (path === "/wake_up") {
      this.sleeping = false;
      this.sleepLevel = 0;
      return plain("");
    }
    return json(200, { is_sleeping: this.sleeping });
  }

  private load(body: Record<string, unknown>): AdminAnswer {
    const name = typeof body.lora_name === "string" ? body.lora_name : "";
    const path = typeof body.lora_path === "string" ? body.lora_path : "";
    if (name === "" || path === "") {
      return json(400, errorBody("Both 'lora_name' and 'lora_path' must be provided.", "InvalidUserInput", 400));
    }
    if (body.load_inplace !== true && this.adapters.has(name)) {
      const message =
        `The lora adapter '${name}' has already been loaded. ` +
        "If you want to load the adapter in place, set 'load_inplace' to True.";
      return json(400, errorBody(message, "InvalidUserInput", 400));
    }
    if (!existsSync(join(path, "adapter_config.json"))) {
      const message = `Loading lora ${name} failed: No adapter found for ${path}`;
      return json(404, errorBody(message, "NotFoundError", 404));
    }
    const rank = adapterRank(path);
    const maxRank = this.flags?.maxLoraRank ?? 16;
    if (rank !== null && rank > maxRank) {
      const message = `LoRA rank ${rank} is greater than max_lora_rank ${maxRank}.`;
      return json(400, errorBody(message, "BadRequestError", 400));
    }
    this.adapters.set(name, path);
    return plain(`Success: LoRA adapter '${name}' added successfully.`);
  }

  /** `update_config` then `reload_weights`: the full-weight reload of one worker (tensor parallel size 1). */
  private collectiveRpc(body: Record<string, unknown>): AdminAnswer {
    const method = body.method;
    if (typeof method !== "string") return json(400, { detail: "Missing 'method' in request body" });
    const args = Array.isArray(body.args) ? body.args : [];
    if (method === "update_config") {
      const overrides = (args[0] ?? {}) as Record<string, unknown>;
      const bad = Object.keys(overrides).find((k) => k !== "load_config" && k !== "model_config");
      if (bad !== undefined) {
        const message = `Config \`${bad}\` not supported. Allowed configs: {'load_config', 'model_config'}`;
        return json(500, errorBody(message, "InternalServerError", 500));
      }
      const model = (overrides.model_config as { model?: unknown } | undefined)?.model;
      if (typeof model === "string") this.pendingModel = model;
      return json(200, { results: [null] });
    }
    if (method === "reload_weights") {
      const folder = this.pendingModel ?? this.weightsPath;
      if (folder === null || !hasSafetensors(folder)) {
        const message = `Cannot find any model weights with \`${folder}\``;
        return json(500, errorBody(message, "InternalServerError", 500));
      }
      this.weightsPath = folder;
      return json(200, { results: [null] });
    }
    return json(500, errorBody(`'Worker' object has no attribute '${method}'`, "InternalServerError", 500));
  }

  private unload(body: Record<string, unknown>): AdminAnswer {
    const name = typeof body.lora_name === "string" ? body.lora_name : "";
    if (name === "") {
      const message = "'lora_name' needs to be provided to unload a LoRA adapter.";
      return json(400, errorBody(message, "InvalidUserInput", 400));
    }
    if (!this.adapters.delete(name)) {
      return json(404, errorBody(`The lora adapter '${name}' cannot be found.`, "NotFoundError", 404));
    }
    return plain(`Success: LoRA adapter '${name}' removed successfully.`);
  }
}

/** Whether a folder holds a `*.safetensors` file (what vLLM's default loader reads). */
function hasSafetensors(folder: string): boolean {
  try {
    return readdirSync(folder).some((name) => name.endsWith(".safetensors"));
  } catch {
    return false;
  }
}

/** The rank `r` of a PEFT adapter folder's `adapter_config.json`, or null when it names none. */
function adapterRank(folder: string): number | null {
  try {
    const config = JSON.parse(readFileSync(join(folder, "adapter_config.json"), "utf8")) as { r?: unknown };
    return typeof config.r === "number" ? config.r : null;
  } catch {
    return null;
  }
}
