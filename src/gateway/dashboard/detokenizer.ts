/**
 * @module Token texts for the trace viewer: each id decoded alone through the `/detokenize` route (vLLM's shape,
 * `{tokens}` → `{prompt}`) of a server registered for the model, and cached per (model, id), since a vocabulary is
 * small next to the traces that repeat its ids. The model's servers are tried in their registered order, a server that
 * does not answer giving way to the next: a finished run's dead engine may stay registered before a live one. Ids no
 * server can decode are left out (the page shows the id).
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

/** Decodes token ids one by one through the first of a model's registered servers that answers, with a per-model cache. */
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
      for (const { endpoint } of await this.store.listModels(model)) {
        const left = missing.filter((id) => !cached.has(id));
        if (left.length === 0 || (await this.decodeAll(serverRoot(endpoint), left, cached))) break;
      }
    }
    const out: Record<string, string> = {};
    for (const id of ids) {
      const text = cached.get(id);
      if (text !== undefined) out[id] = text;
    }
    return out;
  }

  /**
   * Decodes `ids` with {@link CONCURRENCY} calls in flight, storing each text in `into`.
   * @returns true when the server answered every call (some perhaps with a refusal); false when one went unanswered
   *   (refused connection, timeout), which stops the rest: the caller tries the next server
   */
  private async decodeAll(root: string, ids: readonly number[], into: Map<number, string>): Promise<boolean> {
    let next = 0;
    let reachable = true;
    const worker = async () => {
      while (reachable && next < ids.length) {
        const id = ids[next++] as number;
        const answer = await decodeOne(root, id);
        if (answer === UNREACHABLE) reachable = false;
        else if (answer !== undefined) into.set(id, answer);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ids.length) }, worker));
    return reachable;
  }
}

/** What {@link decodeOne} answers for a server that did not answer. */
const UNREACHABLE = Symbol("unreachable");

/** One id's text; undefined when the server refuses it; {@link UNREACHABLE} when it does not answer in time. */
async function decodeOne(root: string, id: number): Promise<string | undefined | typeof UNREACHABLE> {
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
    // A dead server, or one that hangs: the next registered one is tried, and the page shows ids for what none decodes.
    return UNREACHABLE;
  }
}
