import { describe, expect, it } from "vitest";
import { parseCritique, parseProposals } from "./proposals.js";

const rules = { count: 2, maxChars: 40, existing: ["Be brief."] };

describe("parseProposals", () => {
  it("accepts a JSON object with exactly the asked number of prompts, trimmed", () => {
    expect(parseProposals('{"prompts": [" Use the tool. ", "Show the number."]}', rules)).toEqual({
      ok: true,
      value: ["Use the tool.", "Show the number."],
    });
  });

  it("accepts a bare array and a ```json fence around the JSON", () => {
    const fenced = 'Here you go:\n```json\n["Use the tool.", "Show the number."]\n```\nGood luck.';
    expect(parseProposals(fenced, rules)).toEqual({ ok: true, value: ["Use the tool.", "Show the number."] });
  });

  it("rejects text that is not JSON", () => {
    expect(parseProposals("1. Use the tool.\n2. Show the number.", rules)).toEqual({
      ok: false,
      problems: ["the answer is not valid JSON"],
    });
  });

  it("rejects JSON without a prompts list", () => {
    expect(parseProposals('{"prompt": "x"}', rules)).toMatchObject({ ok: false });
  });

  it("rejects the wrong count and names it", () => {
    expect(parseProposals('{"prompts": ["Use the tool."]}', rules)).toEqual({
      ok: false,
      problems: ["expected 2 prompts, got 1"],
    });
  });

  it("rejects empty, too long, non-string and duplicate prompts, naming each", () => {
    const answer = JSON.stringify({ prompts: ["", "x".repeat(41), 7, "Be brief.", "A", " A "] });
    const checked = parseProposals(answer, { ...rules, count: 6 });
    expect(checked).toEqual({
      ok: false,
      problems: [
        "prompt 1 is empty",
        "prompt 2 is 41 characters (at most 40)",
        "prompt 3 is not a string",
        "prompt 4 repeats an earlier or current prompt",
        "prompt 6 repeats an earlier or current prompt",
      ],
    });
  });
});

describe("parseCritique", () => {
  it("accepts non-empty text and rejects an empty or missing one", () => {
    expect(parseCritique("  The prompt never mentions the tool. ")).toEqual({
      ok: true,
      value: "The prompt never mentions the tool.",
    });
    expect(parseCritique(" \n")).toEqual({ ok: false, problems: ["the critique is empty"] });
    expect(parseCritique(null)).toMatchObject({ ok: false });
  });
});
