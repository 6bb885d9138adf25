/**
 * @module Token texts for the trace viewer: each id decoded alone through the `/detokenize` route (vLLM's shape,
 * `{tokens}` → `{prompt}`) of a server registered for the model, and cached per (model, id), since a vocabulary is
 * small next to the traces that repeat its ids. Ids the server cannot decode are left out (the page shows the id).
 * @see vLLM OpenAI-compatible server, `POST /detokenize`
 */
import type { Store } from "../../store/store.js";

/** Largest number of ids one lookup decodes. */
export const MAX_DETOKENIZE_IDS = 4096;
/** Decode calls in flight at once per lookup. */
const CONCURRENCY = 16;
/** Per-call timeout, ms. */
const CALL_TIMEOUT_MS = 5000;
/** Cached texts per model before the cache is cleared (bounds memory whatever the vocabulary). */
const MAX_CACHED_PER_MODEL = 500_000;

/** The server root of an OpenAI base URL: `http://h:8000/v1` → `http://h:8000` (`/detokenize` lives at the root). */
export function serverRoot(endpoint: string): string {
  return endpoint.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** Decodes token ids one by one through a model's registered server, with a per-model cache. */
export class Detokenizer {
  private readonly store: Store;
  private readonly cache = new Map<string, Map<number, string>>();

  /** @param store - where the model endpoints are registered (`POST /api/models`) */
  constructor(store: Store) {
    this.store = store;
  }

  /**
   * Texts of token ids.
   * @param model - the model name the calls were made with
   * @param ids - token ids, at most {@link MAX_DETOKENIZE_IDS}
   * @returns id → text for every id decoded (now or earlier); empty when no server is registered for the model
   */
  async texts(model: string, ids: readonly number[]): Promise<Record<string, string>> {
    let cached = this.cache.get(model);
    if (!cached || cached.size > MAX_CACHED_PER_MODEL) {
      cached = new Map();
      this.cache.set(model, cached);
    }
    const missing = [...new Set(ids)].filter((id) => !cached.has(id));
    if (missing.length > 0) {
      const [endpoint] = await this.store.listModels(model);
      if (endpoint) await this.decodeAll(serverRoot(endpoint.endpoint), missing, cached);
    }
    const out: Record<string, string> = {};
    for (const id of ids) {
      const text = cached.get(id);
      if (text !== undefined) out[id] = text;
    }
    return out;
  }

  /** Decodes `ids` with {@link CONCURRENCY} calls in flight, storing each text in `into`. */
  private async decodeAll(root: string, ids: readonly number[], into: Map<number, string>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++] as number;
        const text = await decodeOne(root, id);
        if (text !== undefined) into.set(id, text);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ids.length) }, worker));
  }
}

/** One id's text, or undefined when the server refuses, fails or does not answer in time. */
async function decodeOne(root: string, id: number): Promise<string | undefined> {
  try {
    const res = await fetch(`${root}/detokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tokens: [id] }),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    if (!res.ok) return undefined;
    const body = (await res.json()) as { prompt?: unknown };
    return typeof body.prompt === "string" ? body.prompt : undefined;
  } catch {
    // A server without /detokenize or a dead one: the page falls back to showing ids, so there is nothing to raise.
    return undefined;
  }
}
