/**
 * @module Chooses which registered endpoint of a model serves a call.
 *
 * Rule:
 * 1. Sort the model's endpoints by URL, so every gateway process sees the same order.
 * 2. Start at index `fnv1a(rolloutId) mod n`: every call of one rollout goes to the same server, so its growing
 *    multi-turn prompt hits that server's prefix cache.
 * 3. Walk forward (wrapping) to the first endpoint that is not cooling down.
 * 4. An endpoint that fails a connection (refused, reset, unreachable) cools down for
 *    `min(max, base * 2^(failures-1))` ms; while cooling it is skipped, and its rollouts move to the next endpoint.
 *    When the cool-down ends the next call to it is a probe: success clears its record (its rollouts come back),
 *    another failure doubles the cool-down.
 * 5. When every endpoint is cooling down, the one whose cool-down ends first is tried anyway, rather than failing.
 */
import type { Model } from "../../protocol/index.js";

/** FNV-1a, 32 bit: a stable, fast string hash (same value in every process and run). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

interface Health {
  failures: number;
  /** Epoch ms until which the endpoint is skipped. */
  coolUntilMs: number;
}

/** Sticky-per-rollout endpoint choice with failure cool-downs. One instance per gateway. */
export class EndpointPicker {
  private readonly health = new Map<string, Health>();

  /**
   * @param cooldownBaseMs - cool-down after an endpoint's first connection failure, ms
   * @param cooldownMaxMs - longest cool-down, ms
   * @param now - clock, epoch ms (tests pass their own)
   */
  constructor(
    private readonly cooldownBaseMs: number,
    private readonly cooldownMaxMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Picks the endpoint for one try of a call (see the module rule).
   * @param endpoints - the model's registered endpoints, any order
   * @param rolloutId - the rollout making the call
   * @param exclude - endpoint URLs that already failed this call
   * @returns the chosen endpoint, or undefined when `endpoints` is empty
   */
  pick(endpoints: readonly Model[], rolloutId: string, exclude: ReadonlySet<string> = new Set()): Model | undefined {
    if (endpoints.length === 0) return undefined;
    const sorted = endpoints.length === 1 ? endpoints : [...endpoints].sort(byUrl);
    const start = fnv1a(rolloutId) % sorted.length;
    const now = this.now();
    let fallback: Model | undefined;
    let fallbackUntil = Number.POSITIVE_INFINITY;
    for (let step = 0; step < sorted.length; step++) {
      const candidate = sorted[(start + step) % sorted.length]!;
      const coolUntil = this.health.get(candidate.endpoint)?.coolUntilMs ?? 0;
      if (coolUntil <= now && !exclude.has(candidate.endpoint)) return candidate;
      const rank = exclude.has(candidate.endpoint) ? coolUntil + 1e15 : coolUntil;
      if (rank < fallbackUntil) {
        fallback = candidate;
        fallbackUntil = rank;
      }
    }
    return fallback;
  }

  /** Records a connection failure of `endpoint`, starting or doubling its cool-down. */
  reportFailure(endpoint: string): void {
    const failures = (this.health.get(endpoint)?.failures ?? 0) + 1;
    const coolMs = Math.min(this.cooldownMaxMs, this.cooldownBaseMs * 2 ** (failures - 1));
    this.health.set(endpoint, { failures, coolUntilMs: this.now() + coolMs });
  }

  /** Records that `endpoint` answered: it is healthy again. */
  reportSuccess(endpoint: string): void {
    if (this.health.size > 0) this.health.delete(endpoint);
  }

  /** @returns whether `endpoint` is currently skipped */
  isCoolingDown(endpoint: string): boolean {
    return (this.health.get(endpoint)?.coolUntilMs ?? 0) > this.now();
  }
}

function byUrl(a: Model, b: Model): number {
  return a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0;
}
