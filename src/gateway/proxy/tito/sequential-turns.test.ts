import { describe, expect, it } from "vitest";
import { sequentialTurns } from "./sequential-turns.js";

const call = (id: string) => ({ id, type: "function", function: { name: "f", arguments: "{}" } });
const result = (id: string) => ({ role: "tool", tool_call_id: id, content: id });

describe("sequentialTurns", () => {
  it("splits a multi-call assistant message followed by one result per call into single-call turns", () => {
    const grouped = { role: "assistant", content: "go", tool_calls: [call("a"), call("b")] };
    expect(sequentialTurns([grouped, result("b"), result("a")])).toEqual([
      { role: "assistant", content: "go", tool_calls: [call("a")] },
      result("a"),
      { role: "assistant", content: null, tool_calls: [call("b")] },
      result("b"),
    ]);
  });

  it("returns the same list when a call has no result or nothing is grouped", () => {
    const missing = [{ role: "assistant", content: null, tool_calls: [call("a"), call("b")] }, result("a")];
    expect(sequentialTurns(missing)).toBe(missing);
    const single = [{ role: "assistant", content: null, tool_calls: [call("a")] }, result("a")];
    expect(sequentialTurns(single)).toBe(single);
  });
});
