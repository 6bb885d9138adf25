/**
 * @module How the trained weights reach the servers that answer the agents: collocated (the engine server serves
 * the very engine the trainer updates, so nothing moves) or remote (save a checkpoint, `POST /v1/load_weights`).
 * vLLM servers with runtime LoRA loading are in `vllm-serving.ts`.
 */
import { join } from "node:path";
import { request } from "undici";
import type { Engine } from "../engine/engine.js";

/** One trained policy as served: the model name agents' calls reach it by, and its engine. */
export interface ServedPolicy {
  /** The model name the gateway sends for this policy's agents (e.g. `policy`, `policy-writer`). */
  modelName: string;
  /** The engine holding the policy's trained weights. */
  engine: Engine;
}

/** The servers answering agents' model calls, and how they get new weights. */
export interface PolicyServing {
  /** OpenAI-compatible base URLs (ending in `/v1`) registered with the gateway. */
  readonly endpoints: readonly string[];
  /**
   * Makes every server serve each policy's current weights under its model name. Called while the gateway proxy is
   * paused and drained; every policy is trained in the same step, so all carry `policyVersion`.
   * @param policies - every trained policy (one for a policy shared by all agents, one per agent otherwise)
   * @param policyVersion - the trainer's version of these weights
   * @throws {Error} when a server refuses the new weights, or cannot serve this many policies
   */
  publish(policies: readonly ServedPolicy[], policyVersion: number): Promise<void>;
  /**
   * Runs one update (train, then `publish`) with the servers' accelerator memory handed to the trainer, e.g. a
   * collocated vLLM asleep; absent: the update just runs.
   * @param update - the update; it may call `publish`
   * @returns what `update` returns
   */
  aroundUpdate?<T>(update: () => Promise<T>): Promise<T>;
}

/**
 * Serving by an engine server in this process over the same engine object: a train step already changed the weights
 * it serves, so publishing is a no-op.
 * @param endpoint - the engine server's base URL, e.g. `http://127.0.0.1:PORT/v1`
 */
export function collocatedServing(endpoint: string): PolicyServing {
  return { endpoints: [endpoint], publish: async () => {} };
}

/**
 * Serving by separate engine servers: each publish saves the weights to `weightsDir/vVERSION` and asks every server
 * to hot-swap to it (`POST {endpoint}/load_weights {path}`); the servers must see the same file system. One policy
 * only: `/v1/load_weights` swaps the server's one engine.
 * @param endpoints - base URLs ending in `/v1`
 * @param weightsDir - where published weights are written, e.g. `runs/NAME/weights` (inside each server's
 *   `--checkpoint-root`)
 * @param key - the servers' admin key, sent as a Bearer token; empty sends none
 */
export function remoteServing(endpoints: readonly string[], weightsDir: string, key = ""): PolicyServing {
  return {
    endpoints,
    async publish(policies, policyVersion) {
      const engine = onePolicy(policies).engine;
      const dir = join(weightsDir, `v${policyVersion}`);
      await engine.saveCheckpoint(dir);
      for (const endpoint of endpoints) {
        const url = `${endpoint.replace(/\/+$/, "")}/load_weights`;
        const response = await request(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...(key !== "" ? { authorization: `Bearer ${key}` } : {}) },
          body: JSON.stringify({ path: dir }),
        });
        const text = await response.body.text();
        if (response.statusCode >= 400) throw new Error(`${url} answered ${response.statusCode}: ${text}`);
      }
    },
  };
}

/**
 * The one policy a running engine server can take.
 * @throws {Error} for several policies (or none)
 */
function onePolicy(policies: readonly ServedPolicy[]): ServedPolicy {
  const [policy] = policies;
  if (policies.length > 1) {
    const names = policies.map((p) => p.modelName).join(", ");
    throw new Error(
      `a running engine server (--engine-url) serves one policy, not ${policies.length} (${names}); ` +
        "a run with a policy per agent serves its policies from the engine server it starts itself",
    );
  }
  if (policy === undefined) throw new Error("publish needs a policy");
  return policy;
}
