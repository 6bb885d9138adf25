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
 * - A completion naming a model that is neither the served base model nor a loaded adapter: 404
 *   `{"error": {"message": "The model `NAME` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}`.
 * Error bodies are `{"error": {message, type, param, code}}` (ErrorResponse/ErrorInfo).
 */
import { existsSync } from "node:fs";
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

/** Loaded adapters and the sleep state of one fake vLLM. */
export class FakeVllmAdmin {
  /** Adapter name to the folder it was loaded from. */
  readonly adapters = new Map<string, string>();
  /** Every admin call, in arrival order. */
  readonly calls: AdminCall[] = [];
  /** Whether `POST /sleep` came after the last `POST /wake_up`. */
  sleeping = false;
  /** The level of the current sleep (0 awake). */
  sleepLevel = 0;

  /** @param baseModel - the served model name; null accepts every model name (the fake's default) */
  constructor(readonly baseModel: string | null) {}

  /** Whether `path` is one of the admin routes. */
  static handles(path: string): boolean {
    return ["/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/sleep", "/wake_up", "/is_sleeping"].includes(path);
  }

  /**
   * Answers an admin route.
   * @param path - the route
   * @param query - the URL's query
   * @param body - the parsed JSON body ({} for none)
   */
  handle(path: string, query: URLSearchParams, body: Record<string, unknown>): AdminAnswer {
    const answer = this.answer(path, query, body);
    const args = path === "/sleep" ? { level: Number(query.get("level") ?? "1") } : body;
    this.calls.push({ path, args, status: answer.status });
    return answer;
  }

  /**
   * The 404 vLLM gives a completion for an unknown model, or null when the name is served.
   * @param model - the request's `model`
   */
  modelError(model: unknown): AdminAnswer | null {
    if (this.baseModel === null || model === this.baseModel) return null;
    if (typeof model === "string" && this.adapters.has(model)) return null;
    const error = { message: `The model \`${String(model)}\` does not exist.`, type: "NotFoundError" };
    return json(404, { error: { ...error, param: "model", code: 404 } });
  }

  private answer(path: string, query: URLSearchParams, body: Record<string, unknown>): AdminAnswer {
    if (path === "/v1/load_lora_adapter") return this.load(body);
    if (path === "/v1/unload_lora_adapter") return this.unload(body);
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
    this.adapters.set(name, path);
    return plain(`Success: LoRA adapter '${name}' added successfully.`);
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
