/**
 * @module The policies one run trains: one shared policy, or one per agent (`agents.policy: per_agent`), each with its
 * engine and the model name the gateway serves it under. A step's rows go to the policy of the agent that made them.
 */
import type { Engine, TrainMetrics } from "../engine/engine.js";
import type { TrainingRow } from "./training-row.js";

/** One trained policy. */
export interface TrainedPolicy {
  /** The agent whose rows train it; null for the shared policy (every trained agent's rows). */
  agent: string | null;
  /** Model name the gateway registers it under and the agent's calls are routed to. */
  modelName: string;
  engine: Engine;
}

/**
 * The model name of an agent's own policy: `MODEL-AGENT`, e.g. `policy-writer`.
 * @param modelName - the run's model name
 * @param agent - the agent's name
 */
export function agentModelName(modelName: string, agent: string): string {
  return `${modelName}-${agent}`;
}

/** Rows of a step (by index) that go to one policy. */
export interface PolicyShare {
  policy: TrainedPolicy;
  /** Indices into the rows, ascending. */
  indices: number[];
}

/**
 * Deals rows (given by index) to the policies: all to a shared policy, else each to its agent's policy.
 * @param rows - the step's rows
 * @param indices - which rows to deal, e.g. one mini-batch
 * @param policies - the run's policies (one with agent null, or one per agent)
 * @returns one share per policy that got rows, in policy order
 * @throws {Error} when a row's agent has no policy (the batch's agent filter keeps only trained agents' rows)
 */
export function sharesOf(
  rows: readonly Pick<TrainingRow, "agentName" | "rolloutId">[],
  indices: readonly number[],
  policies: readonly TrainedPolicy[],
): PolicyShare[] {
  const shared = policies.find((p) => p.agent === null);
  if (shared !== undefined) return indices.length === 0 ? [] : [{ policy: shared, indices: [...indices] }];
  const byAgent = new Map(policies.map((p) => [p.agent, { policy: p, indices: [] as number[] }]));
  for (const i of indices) {
    const row = rows[i];
    const share = byAgent.get(row?.agentName ?? null);
    if (share === undefined) {
      throw new Error(`rollout ${row?.rolloutId}: a row of agent ${JSON.stringify(row?.agentName)} has no policy`);
    }
    share.indices.push(i);
  }
  return [...byAgent.values()].filter((share) => share.indices.length > 0);
}

/**
 * Logprobs of each row's tokens under its own policy, in row order.
 * @param rows - the rows (agent names)
 * @param tokenIds - each row's token ids, same order
 * @param indices - which rows to score
 * @param policies - the run's policies
 * @returns logprobs of `indices`, in the order of `indices`
 */
export async function policyLogprobs(
  rows: readonly Pick<TrainingRow, "agentName" | "rolloutId">[],
  tokenIds: readonly number[][],
  indices: readonly number[],
  policies: readonly TrainedPolicy[],
): Promise<number[][]> {
  const byRow = new Map<number, number[]>();
  for (const { policy, indices: mine } of sharesOf(rows, indices, policies)) {
    const logprobs = await policy.engine.logprobs(mine.map((i) => tokenIds[i] ?? []));
    for (const [k, row] of mine.entries()) byRow.set(row, logprobs[k] ?? []);
  }
  return indices.map((i) => byRow.get(i) ?? []);
}

/** One optimiser step's metrics and the agent whose policy took it (null: the shared policy). */
export type AgentTrainMetrics = TrainMetrics & { agent?: string | null };

/**
 * Per-policy metrics of a step with a policy per agent: `policy/AGENT/rows`, `…/tokens` (trained tokens), the mean
 * over that policy's optimiser steps of `…/loss`, `…/entropy`, `…/grad_norm` (null when it took none), and
 * `…/foreign_calls` (its agent's calls another model answered). Empty for a shared policy (the step's own metrics
 * are its).
 * @param rows - the step's rows (agent names and loss masks)
 * @param updates - the step's optimiser steps
 * @param policies - the run's policies
 * @param foreign - `foreignCalls` of the step; default none
 */
export function perPolicyMetrics(
  rows: readonly Pick<TrainingRow, "agentName" | "lossMask">[],
  updates: readonly AgentTrainMetrics[],
  policies: readonly TrainedPolicy[],
  foreign: ReadonlyMap<string, { calls: number }> = new Map(),
): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const { agent } of policies) {
    if (agent === null) continue;
    const mine = rows.filter((row) => row.agentName === agent);
    const steps = updates.filter((m) => m.agent === agent && m.nonFiniteSkipped !== true);
    const mean = (pick: (m: TrainMetrics) => number) =>
      steps.length === 0 ? null : steps.reduce((sum, m) => sum + pick(m), 0) / steps.length;
    out[`policy/${agent}/rows`] = mine.length;
    out[`policy/${agent}/tokens`] = mine.reduce((sum, row) => sum + row.lossMask.reduce((a, b) => a + b, 0), 0);
    out[`policy/${agent}/loss`] = mean((m) => m.loss);
    out[`policy/${agent}/entropy`] = mean((m) => m.entropy);
    out[`policy/${agent}/grad_norm`] = mean((m) => m.gradNorm);
    out[`policy/${agent}/foreign_calls`] = foreign.get(agent)?.calls ?? 0;
  }
  return out;
}

/**
 * Calls of each per-agent policy's agent that another model answered, e.g. a running gateway (`--gateway-url`)
 * without the `agent_routes` that send `writer` to `policy-writer`: that policy then trains on samples it did not
 * make. Empty for a shared policy.
 * @param records - the step's rollouts (triplet `model_request` events carry `agent_name` and `server.model`)
 * @param policies - the run's policies
 * @returns per agent, how many of its calls another model served and the models that did; only agents with such calls
 */
export function foreignCalls(
  records: readonly { events: readonly { event_type: string; data: unknown }[] }[],
  policies: readonly TrainedPolicy[],
): Map<string, { calls: number; models: string[] }> {
  const own = new Map(policies.flatMap((p) => (p.agent === null ? [] : [[p.agent, p.modelName] as const])));
  const out = new Map<string, { calls: number; models: string[] }>();
  for (const event of records.flatMap((record) => record.events)) {
    if (event.event_type !== "model_request") continue;
    const data = event.data as { agent_name?: unknown; server?: { model?: unknown } } | null;
    const agent = typeof data?.agent_name === "string" ? data.agent_name : undefined;
    const model = typeof data?.server?.model === "string" ? data.server.model : null;
    const expected = agent === undefined ? undefined : own.get(agent);
    if (expected === undefined || model === null || model === expected) continue;
    const seen = out.get(agent as string) ?? { calls: 0, models: [] };
    seen.calls += 1;
    if (!seen.models.includes(model)) seen.models.push(model);
    out.set(agent as string, seen);
  }
  return out;
}
