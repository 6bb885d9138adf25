import { describe, expect, it } from "vitest";
import type { Event } from "./event.js";
import { buildSpanTree, type SpanTreeNode } from "./span-tree.js";

let sequence = 0;
function event(event_type: string, data: Record<string, unknown>, timestamp = 1000): Event {
  return { event_type, rollout_id: "r", attempt_id: "0", timestamp, data, sequence: ++sequence, event_id: null };
}

function span(span_id: string, parent_span_id: string | null, startNs: number): Event {
  return event("span", {
    name: `s-${span_id}`,
    span_id,
    parent_span_id,
    start_time_unix_nano: String(startNs),
    end_time_unix_nano: String(startNs + 10),
    attributes: {},
  });
}

function shape(nodes: SpanTreeNode[]): unknown[] {
  return nodes.map((node) => {
    const label = node.kind === "span" ? node.span.span_id : `${node.kind}#${node.event.sequence}`;
    return node.children.length > 0 ? { [label]: shape(node.children) } : label;
  });
}

describe("buildSpanTree", () => {
  it("nests spans by parent, orders siblings by start time, and places calls and rewards under their span", () => {
    const events = [
      span("c2", "root", 300),
      span("c1", "root", 200),
      span("root", null, 100),
      event("model_request", { trace_context: { span_id: "c2" }, latency_ms: 0 }),
      event("reward", { value: 1, span_id: "root" }),
      event("log", { message: "left out" }),
    ];
    expect(shape(buildSpanTree(events))).toEqual([{ root: ["c1", { c2: ["model_request#4"] }, "reward#5"] }]);
  });

  it("puts what names no stored span at the top level, in time order", () => {
    const events = [
      span("a", "missing-parent", 5_000_000_000),
      event("model_request", {}, 1),
      event("reward", { value: 0 }, 9),
    ];
    expect(shape(buildSpanTree(events))).toEqual(["model_request#8", "a", "reward#9"]);
  });

  it("keeps spans of a malformed parent cycle as roots instead of losing them", () => {
    const tree = buildSpanTree([span("x1", "x2", 1), span("x2", "x1", 2)]);
    const ids = JSON.stringify(shape(tree));
    expect(ids).toContain("x1");
    expect(ids).toContain("x2");
  });
});
