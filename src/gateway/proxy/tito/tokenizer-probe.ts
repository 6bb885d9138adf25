/**
 * @module The check a `tito` registration can make of its tokenizer folder against the model server: the server's own
 * `POST /tokenize` (vLLM, `arclight engine serve`) must split a probe text into the same ids as the folder. A server
 * that cannot be reached or has no `/tokenize` is not checked (it may start later); the folder's vocabulary is not
 * compared with the model's output layer, which may legitimately be larger (Qwen2.5: 151,936 rows, 151,665 tokens).
 */
import { BadRequest, quoteStart } from "../../../protocol/index.js";
import type { TokenizerFolder } from "../../../wire/tokenizer-folder.js";

/** Plain text (no special token) with ASCII, punctuation, digits, accents and CJK: tokenizers that differ split it apart. */
export const PROBE_TEXT = "Hello, world! 2+3=5; naïve café — 汉字 ✓\n  indented";

/** How long the probe waits for the server, ms: a registration must not hang on a server that is down. */
const PROBE_TIMEOUT_MS = 3000;

/** The server's ids for the probe text, or undefined when it gives none (unreachable, no `/tokenize`, another shape). */
async function servedIds(endpoint: string, model: string): Promise<number[] | undefined> {
  const root = endpoint.replace(/\/+$/, "").replace(/\/v1$/, "");
  try {
    const res = await fetch(`${root}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, prompt: PROBE_TEXT, add_special_tokens: false }),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    if (!res.ok) return undefined;
    const tokens = ((await res.json()) as { tokens?: unknown }).tokens;
    return Array.isArray(tokens) && tokens.every(Number.isInteger) ? (tokens as number[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks that the model server at `endpoint` tokenizes as the folder does.
 * @param model - the registered model name (sent as the request's `model`)
 * @param endpoint - the registered OpenAI base URL (`…/v1`); `/tokenize` is at its root, as vLLM serves it
 * @param folder - the registration's tokenizer folder, read
 * @throws {BadRequest} when the server answers the probe with other ids, naming the model, the folder and the first
 *   position where the ids differ
 */
export async function checkServedTokenizer(model: string, endpoint: string, folder: TokenizerFolder): Promise<void> {
  const served = await servedIds(endpoint, model);
  if (served === undefined) return;
  const local = folder.tokenizer.encode(PROBE_TEXT);
  const length = Math.max(served.length, local.length);
  const at = Array.from({ length }, (_, i) => i).find((i) => served[i] !== local[i]);
  if (at === undefined) return;
  throw new BadRequest(
    `model ${quoteStart(model, 200)}: tokenizer folder ${quoteStart(folder.folder, 300)} does not match the model ` +
      `served at ${quoteStart(endpoint, 300)}: a probe text is ${served.length} ids there and ${local.length} here, ` +
      `first different at position ${at} (${served[at] ?? "end"} there, ${local[at] ?? "end"} here)`,
  );
}
