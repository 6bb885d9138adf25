import { describe, expect, it } from "vitest";
import { agentFilter, invalidAgentEntry } from "./agent-match.js";

describe("agentFilter", () => {
  it("matches exact names and /regex/ entries, never a call without a name", () => {
    const filter = agentFilter(["writer", "/^re/"]);
    expect(["writer", "rewriter", "checker", "writer2"].map(filter)).toEqual([true, true, false, false]);
    expect(filter(undefined)).toBe(false);
  });

  it("matches nothing when empty", () => {
    expect(agentFilter([])("writer")).toBe(false);
  });

  it("names the first /regex/ entry that does not compile", () => {
    expect(invalidAgentEntry(["a", "/(/", "/ok/"])).toBe("/(/");
    expect(invalidAgentEntry(["a", "/ok/"])).toBeNull();
  });
});
