import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { applySetFlags, collectSetFlag } from "./layered-config.js";

describe("applySetFlags", () => {
  it("sets dotted keys with YAML values, creates missing mappings, later flags win, the input is not changed", () => {
    const raw = { name: "a", optimizer: { learning_rate: 0.001, betas: [0.9, 0.99] }, total_steps: 2 };
    const out = applySetFlags(raw, [
      "total_steps=5",
      "optimizer.learning_rate=1e-4",
      "trainer.credit.mode=per_call",
      "tags=[x, y]",
      "name=b",
      "name=c",
      "val_path=null",
    ]);
    expect(out).toEqual({
      name: "c",
      optimizer: { learning_rate: 1e-4, betas: [0.9, 0.99] },
      total_steps: 5,
      trainer: { credit: { mode: "per_call" } },
      tags: ["x", "y"],
      val_path: null,
    });
    expect(raw).toEqual({ name: "a", optimizer: { learning_rate: 0.001, betas: [0.9, 0.99] }, total_steps: 2 });
  });

  it("keeps '=' inside the value", () => {
    expect(applySetFlags({}, ["format.regex=a=b"])).toEqual({ format: { regex: "a=b" } });
  });

  it("names --set and the text for a flag without '=', an empty segment, bad YAML or a path through a scalar", () => {
    const message = (sets: string[]) => {
      try {
        applySetFlags({ total_steps: 3 }, sets);
      } catch (err) {
        expect(err).toBeInstanceOf(CliError);
        return (err as Error).message;
      }
      return "no error";
    };
    expect(message(["total_steps"])).toBe("--set total_steps: expected KEY=VALUE, e.g. --set total_steps=5");
    expect(message(["=5"])).toContain("--set =5: expected KEY=VALUE");
    expect(message(["a..b=1"])).toBe('--set a..b=1: empty key segment in "a..b"');
    expect(message(["total_steps="])).toBe("--set total_steps=: empty value (write total_steps=null for null)");
    expect(message(["a=[1,"])).toMatch(/^--set a=\[1,: invalid YAML\/JSON/);
    expect(message(["total_steps.x=1"])).toBe("--set total_steps.x=1: total_steps is not a mapping in the config");
  });

  it("collects repeated flags in order", () => {
    expect(collectSetFlag("b=2", collectSetFlag("a=1", undefined))).toEqual(["a=1", "b=2"]);
  });
});
