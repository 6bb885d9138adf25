/** Which call's text the judge reads as a rollout's answer, and the reward it starts from. */
import { describe, expect, it } from "vitest";
import type { TripletEventFields } from "../trainer/triplets.js";
import { readRollout } from "./apply.js";

function call(sequence: number, agentName: string | undefined, text: string): TripletEventFields {
  return {
    event_type: "model_request",
    sequence,
    data: {
      prompt_token_ids: [1, 2],
      response_token_ids: [3, 4],
      response_log_probs: [-0.5, -0.25],
      response_text: text,
      server: { model: "m", version: 0 },
      ...(agentName !== undefined ? { agent_name: agentName } : {}),
    },
  };
}

/** A sql_team-shaped rollout: the writer drafts, the frozen checker reviews, the rewriter fixes, the checker speaks last. */
const TEAM = {
  rolloutId: "r",
  dataId: "d",
  events: [
    call(1, "writer", "SELECT nope"),
    call(2, "checker", "THE QUERY IS INCORRECT."),
    call(3, "rewriter", "SELECT name FROM t"),
    call(4, "checker", "THE QUERY IS CORRECT."),
    { event_type: "reward", sequence: 5, data: { value: 1 } },
  ],
};
const settings = { reward_fillna_value: 0, reward_policy: "last" as const };

describe("readRollout", () => {
  it("reads the last call of an agent that trains, never a frozen agent's", () => {
    const agents = {
      train: ["writer", "rewriter"],
      frozen: ["checker"],
      frozen_model: "frozen",
      policy: "shared" as const,
    };
    expect(readRollout(TEAM, { ...settings, agents })).toEqual({ answer: "SELECT name FROM t", reward: 1 });
    // Only `frozen` named: every other agent trains.
    const onlyFrozen = { train: [], frozen: ["checker"], frozen_model: "frozen", policy: "shared" as const };
    expect(readRollout(TEAM, { ...settings, agents: onlyFrozen }).answer).toBe("SELECT name FROM t");
  });

  it("reads the last call when the config names no agents, and none when no trained agent made a call", () => {
    const none = { train: [], frozen: [], frozen_model: "frozen", policy: "shared" as const };
    expect(readRollout(TEAM, { ...settings, agents: none }).answer).toBe("THE QUERY IS CORRECT.");
    expect(readRollout(TEAM, settings).answer).toBe("THE QUERY IS CORRECT.");
    const single = { ...TEAM, events: [call(1, undefined, "42")] };
    expect(readRollout(single, { ...settings, agents: none }).answer).toBe("42");
    const checkerOnly = { train: ["planner"], frozen: ["checker"], frozen_model: "frozen", policy: "shared" as const };
    expect(readRollout(TEAM, { ...settings, agents: checkerOnly }).answer).toBeNull();
  });
});
