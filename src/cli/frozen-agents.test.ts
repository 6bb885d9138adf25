import { describe, expect, it } from "vitest";
import { parseTrainerConfig } from "../trainer/config.js";
import { CliError } from "./cli-error.js";
import { perAgentStack } from "./frozen-agents.js";

describe("perAgentStack", () => {
  const agentsOf = (frozenModel: string) =>
    parseTrainerConfig({
      agents: { policy: "per_agent", train: ["writer", "rewriter"], frozen: ["checker"], frozen_model: frozenModel },
    }).agents;
  const refuse = () => Promise.reject(new Error("no engine here"));

  it("routes each trained agent to MODEL-AGENT and the frozen ones to agents.frozen_model", () => {
    const stack = perAgentStack(agentsOf("frozen"), "policy", refuse, () => undefined, false);
    expect(stack.perAgent?.agents).toEqual(["writer", "rewriter"]);
    expect(stack.perAgent?.frozenModel).toBe("frozen");
  });

  it("refuses an agents.frozen_model that is also an agent's policy name, naming the key", () => {
    const clash = () => perAgentStack(agentsOf("policy-rewriter"), "policy", refuse, () => undefined, false);
    expect(clash).toThrow(CliError);
    expect(clash).toThrow("agents.frozen_model policy-rewriter: also the model name of agent rewriter's policy");
    expect(() => perAgentStack(agentsOf("policy-rewriter"), "team", refuse, () => undefined, false)).not.toThrow();
  });
});
