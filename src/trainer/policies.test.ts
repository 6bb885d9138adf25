import { describe, expect, it } from "vitest";
import type { Engine } from "../engine/engine.js";
import {
  agentModelName,
  foreignCalls,
  perPolicyMetrics,
  policyLogprobs,
  sharesOf,
  type TrainedPolicy,
} from "./policies.js";

/** An engine whose logprobs say which engine scored the row: every position is `mark`. */
function marking(mark: number): Engine {
  const logprobs = async (rows: number[][]) => rows.map((row) => row.map(() => mark));
  return { logprobs } as unknown as Engine;
}

const rows = [
  { rolloutId: "r0", agentName: "writer", lossMask: [1, 1] },
  { rolloutId: "r0", agentName: "rewriter", lossMask: [1, 0, 1] },
  { rolloutId: "r1", agentName: "writer", lossMask: [1] },
];
const perAgent: TrainedPolicy[] = [
  { agent: "writer", modelName: "policy-writer", engine: marking(-1) },
  { agent: "rewriter", modelName: "policy-rewriter", engine: marking(-2) },
];

describe("policies", () => {
  it("names an agent's policy MODEL-AGENT", () => {
    expect(agentModelName("policy", "writer")).toBe("policy-writer");
  });

  it("deals each row to its agent's policy, and every row to a shared one", () => {
    const shares = sharesOf(rows, [0, 1, 2], perAgent);
    expect(shares.map((s) => [s.policy.agent, s.indices])).toEqual([
      ["writer", [0, 2]],
      ["rewriter", [1]],
    ]);
    expect(sharesOf(rows, [1], perAgent).map((s) => s.policy.agent)).toEqual(["rewriter"]);
    const shared: TrainedPolicy[] = [{ agent: null, modelName: "policy", engine: marking(0) }];
    expect(sharesOf(rows, [0, 1, 2], shared).map((s) => s.indices)).toEqual([[0, 1, 2]]);
    expect(sharesOf(rows, [], shared)).toEqual([]);
  });

  it("refuses a row whose agent has no policy, naming its rollout", () => {
    const stray = [...rows, { rolloutId: "r9", agentName: "checker", lossMask: [1] }];
    expect(() => sharesOf(stray, [3], perAgent)).toThrow('rollout r9: a row of agent "checker" has no policy');
  });

  it("scores each row with its own policy, answering in the order asked", async () => {
    const tokens = [[1, 2], [3, 4, 5], [6]];
    expect(await policyLogprobs(rows, tokens, [2, 1, 0], perAgent)).toEqual([[-1], [-2, -2, -2], [-1, -1]]);
  });

  it("reports rows, tokens and each policy's mean update metrics; a policy without an applied step gets nulls", () => {
    const step = { loss: 0.5, gradNorm: 2, entropy: 1, clipFraction: 0, approxKl: 0, tokens: 3 };
    const metrics = perPolicyMetrics(
      rows,
      [
        { ...step, agent: "writer" },
        { ...step, loss: 1.5, agent: "writer" },
        { ...step, agent: "rewriter", nonFiniteSkipped: true },
      ],
      perAgent,
      new Map([["rewriter", { calls: 3, models: ["policy"] }]]),
    );
    expect(metrics).toEqual({
      "policy/writer/rows": 2,
      "policy/writer/tokens": 3,
      "policy/writer/loss": 1,
      "policy/writer/entropy": 1,
      "policy/writer/grad_norm": 2,
      "policy/writer/foreign_calls": 0,
      "policy/rewriter/rows": 1,
      "policy/rewriter/tokens": 2,
      "policy/rewriter/loss": null,
      "policy/rewriter/entropy": null,
      "policy/rewriter/grad_norm": null,
      "policy/rewriter/foreign_calls": 3,
    });
    expect(perPolicyMetrics(rows, [], [{ agent: null, modelName: "policy", engine: marking(0) }])).toEqual({});
  });

  it("counts each agent's calls another model answered (a gateway without the agent routes)", () => {
    const call = (agent: string | undefined, model: string) => ({
      event_type: "model_request",
      data: { agent_name: agent, server: { model, version: 0 } },
    });
    const records = [
      { events: [call("writer", "policy-writer"), call("rewriter", "policy"), { event_type: "reward", data: {} }] },
      { events: [call("rewriter", "frozen"), call("checker", "frozen"), call(undefined, "policy")] },
    ];
    expect([...foreignCalls(records, perAgent)]).toEqual([["rewriter", { calls: 2, models: ["policy", "frozen"] }]]);
    expect(foreignCalls(records, [{ agent: null, modelName: "policy", engine: marking(0) }]).size).toBe(0);
  });
});
