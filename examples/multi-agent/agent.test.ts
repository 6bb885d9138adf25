import { describe, expect, it } from "vitest";
import { scoreAnswer } from "./agent.js";
import { roleBaseUrl } from "./workflow.js";

describe("multi-agent example", () => {
  it("gives each role its own base URL under the rollout's proxy URL", () => {
    const base = "http://127.0.0.1:1/proxy/rollout/r/attempt/0/mode/train/openai/v1";
    expect(roleBaseUrl(base, "checker")).toBe(
      "http://127.0.0.1:1/proxy/rollout/r/attempt/0/mode/train/agent/checker/openai/v1",
    );
  });

  it("scores the first number of an answer against the evaluator's value", () => {
    expect(scoreAnswer(" 12 done", 12)).toBe(1);
    expect(scoreAnswer("7", 12)).toBe(0);
    expect(scoreAnswer("twelve", 12)).toBe(0);
  });
});
