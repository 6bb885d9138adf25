import { describe, expect, it } from "vitest";
import { enclosingAgentName, indexSpans, modelCallAgentName } from "./agent-name.js";

function spanEvent(span_id: string, parent_span_id: string | null, attributes: Record<string, unknown> = {}) {
  return { event_type: "span", data: { span_id, parent_span_id, attributes } };
}

describe("agent of a model call", () => {
  const spans = indexSpans([
    spanEvent("aa", null, { "gen_ai.agent.name": "root-agent" }),
    spanEvent("bb", "aa", { "gen_ai.agent.name": "sub-agent" }),
    spanEvent("cc", "bb"),
    spanEvent("dd", "ee"),
  ]);

  it("is the nearest gen_ai.agent.name at or above the call's span", () => {
    expect(enclosingAgentName(spans, "cc")).toBe("sub-agent");
    expect(enclosingAgentName(spans, "aa")).toBe("root-agent");
  });

  it("is unknown when the chain leaves the stored spans", () => {
    expect(enclosingAgentName(spans, "dd")).toBeUndefined();
    expect(enclosingAgentName(spans, "zz")).toBeUndefined();
  });

  it("stops on a parent cycle", () => {
    const cycle = indexSpans([spanEvent("x1", "x2"), spanEvent("x2", "x1")]);
    expect(enclosingAgentName(cycle, "x1")).toBeUndefined();
  });

  it("prefers the name the proxy recorded over the spans", () => {
    expect(modelCallAgentName({ agent_name: "named", trace_context: { span_id: "cc" } }, spans)).toBe("named");
    expect(modelCallAgentName({ trace_context: { span_id: "cc" } }, spans)).toBe("sub-agent");
    expect(modelCallAgentName({}, spans)).toBeUndefined();
  });
});
