import { describe, expect, it } from "vitest";
import { REASONING_PARSERS, reasoningParser, splitDeepSeekR1Reasoning, splitQwen3Reasoning } from "./reasoning.js";

describe("deepseek_r1", () => {
  it("splits at </think>, with or without the opening tag", () => {
    expect(splitDeepSeekR1Reasoning("<think>9.11 < 9.8.</think>\n\n9.8 is larger.")).toEqual({
      reasoning: "9.11 < 9.8.",
      content: "\n\n9.8 is larger.",
    });
    expect(splitDeepSeekR1Reasoning("Compare digits.</think>9.8")).toEqual({
      reasoning: "Compare digits.",
      content: "9.8",
    });
  });

  it("takes unfinished thinking as reasoning with null content, and empty content after </think> as null", () => {
    expect(splitDeepSeekR1Reasoning("<think>still going")).toEqual({ reasoning: "still going", content: null });
    expect(splitDeepSeekR1Reasoning("<think>done</think>")).toEqual({ reasoning: "done", content: null });
  });
});

describe("qwen3", () => {
  it("needs both tags; else all is content", () => {
    expect(splitQwen3Reasoning("<think>\nplan\n</think>\n\nAnswer")).toEqual({
      reasoning: "\nplan\n",
      content: "\n\nAnswer",
    });
    expect(splitQwen3Reasoning("plan</think>Answer")).toEqual({ reasoning: null, content: "plan</think>Answer" });
    expect(splitQwen3Reasoning("<think>plan")).toEqual({ reasoning: null, content: "<think>plan" });
  });
});

describe("reasoningParser", () => {
  it("finds parsers by vLLM's names and refuses others", () => {
    expect(reasoningParser("qwen3")).toBe(REASONING_PARSERS.qwen3);
    expect(() => reasoningParser("granite")).toThrow(/no reasoning parser "granite" \(known: deepseek_r1, qwen3\)/);
  });
});
