/**
 * @module Next-token sampling (temperature, top-k, top-p) and the logprob the trainer uses as old-policy logprob:
 * log q under the distribution actually sampled from; greedy reports the unmodified log-softmax instead (log of a
 * point mass is always 0).
 * @see Holtzman et al., "The Curious Case of Neural Text Degeneration", ICLR 2020 (nucleus sampling)
 */
import type { Rng } from "./rng.js";

/** The filtering knobs of one sequence (a subset of the engine's `SamplingParams`). */
export interface SamplerSettings {
  /** Softmax temperature; 0 is greedy. */
  temperature: number;
  /** Keep only the k most likely tokens; 0 disables. */
  topK: number;
  /** Keep the smallest set of most likely tokens whose mass reaches topP; 1 disables. */
  topP: number;
}

/** A sampled token and its logprob (nats) as described in the module doc. */
export interface SampledToken {
  tokenId: number;
  logprob: number;
}

/** Samples one token from `logits_V`, [V]; greedy draws nothing from `rng`. */
export function sampleToken(logits_V: Float32Array, settings: SamplerSettings, rng: Rng): SampledToken {
  if (settings.temperature <= 0) return greedy(logits_V);
  const vocab = logits_V.length;
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < vocab; j++) max = Math.max(max, logits_V[j]! / settings.temperature);
  const shifted = new Float64Array(vocab); // logits / T - max, so exp() <= 1
  for (let j = 0; j < vocab; j++) shifted[j] = logits_V[j]! / settings.temperature - max;
  const weights = new Float64Array(vocab); // exp(shifted), computed once for the mass and the draw
  for (let j = 0; j < vocab; j++) weights[j] = Math.exp(shifted[j]!);
  const kept = keptTokens(shifted, settings); // null: every id, in id order
  const count = kept ? kept.length : vocab;
  let mass = 0;
  for (let i = 0; i < count; i++) mass += weights[kept ? kept[i]! : i]!;
  let u = rng.nextFloat() * mass;
  let chosen = kept ? kept[count - 1]! : count - 1;
  for (let i = 0; i < count; i++) {
    const j = kept ? kept[i]! : i;
    u -= weights[j]!;
    if (u < 0) {
      chosen = j;
      break;
    }
  }
  return { tokenId: chosen, logprob: shifted[chosen]! - Math.log(mass) };
}

/** Argmax (lowest id wins ties) with its log-softmax under the raw logits. */
function greedy(logits_V: Float32Array): SampledToken {
  let best = 0;
  for (let j = 1; j < logits_V.length; j++) if (logits_V[j]! > logits_V[best]!) best = j;
  const max = logits_V[best]!;
  let sum = 0;
  for (let j = 0; j < logits_V.length; j++) sum += Math.exp(logits_V[j]! - max);
  return { tokenId: best, logprob: -Math.log(sum) };
}

/** Ids surviving top-k then top-p, most likely first; null when both are off, so the common case allocates nothing. */
function keptTokens(shifted_V: Float64Array, settings: SamplerSettings): number[] | null {
  const vocab = shifted_V.length;
  const useTopK = settings.topK > 0 && settings.topK < vocab;
  const useTopP = settings.topP < 1;
  if (!useTopK && !useTopP) return null;
  const all = Array.from({ length: vocab }, (_, j) => j);
  // Stable sort: equal logits keep id order, so the kept set is deterministic.
  const order = all.sort((a, b) => shifted_V[b]! - shifted_V[a]! || a - b);
  const topK = useTopK ? order.slice(0, settings.topK) : order;
  if (!useTopP) return topK;
  let total = 0;
  for (const j of topK) total += Math.exp(shifted_V[j]!);
  let cumulative = 0;
  for (let i = 0; i < topK.length; i++) {
    cumulative += Math.exp(shifted_V[topK[i]!]!) / total;
    if (cumulative >= settings.topP) return topK.slice(0, i + 1);
  }
  return topK;
}
