/**
 * @module One attempt's events as a tree: spans nested by parent, each model call and reward under the span it
 * names; what names no stored span is a root. Siblings are ordered by start time.
 */
import { indexSpans, modelCallAgentName } from "./agent-name.js";
import type { Event } from "./event.js";
import type { SpanData } from "./span.js";

/** A node of the tree: a span, a model call or a reward. */
export type SpanTreeNode =
  | { kind: "span"; span: SpanData; startNs: bigint; children: SpanTreeNode[] }
  | { kind: "model_request"; event: Event; agentName: string | undefined; startNs: bigint; children: [] }
  | { kind: "reward"; event: Event; startNs: bigint; children: [] };

/** Server time of an event, minus a model call's latency (its start), in ns since the epoch. */
function eventStartNs(event: Event): bigint {
  const latencyMs = typeof event.data.latency_ms === "number" ? event.data.latency_ms : 0;
  return BigInt(Math.round(event.timestamp * 1e6 - latencyMs * 1e3)) * 1000n;
}

function parentOf(event: Event): string | undefined {
  const fromContext = (event.data.trace_context as { span_id?: unknown } | undefined)?.span_id;
  const id = typeof fromContext === "string" ? fromContext : event.data.span_id;
  return typeof id === "string" ? id : undefined;
}

function sortTree(nodes: SpanTreeNode[]): SpanTreeNode[] {
  nodes.sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
  for (const node of nodes) sortTree(node.children);
  return nodes;
}

/** The roots of one attempt's tree; events other than span, model_request and reward are left out. */
export function buildSpanTree(events: readonly Event[]): SpanTreeNode[] {
  const spans = indexSpans(events);
  const nodes = new Map<string, SpanTreeNode & { kind: "span" }>();
  for (const span of spans.values()) {
    nodes.set(span.span_id, { kind: "span", span, startNs: BigInt(span.start_time_unix_nano), children: [] });
  }
  const roots: SpanTreeNode[] = [];
  /** Whether walking up from `id` meets `spanId` (a parent cycle in malformed data: such a span becomes a root). */
  const cycles = (id: string | null | undefined, spanId: string): boolean => {
    for (let steps = 0; id && steps <= nodes.size; steps++) {
      if (id === spanId) return true;
      id = nodes.get(id)?.span.parent_span_id;
    }
    return false;
  };
  const place = (node: SpanTreeNode, parentId: string | null | undefined): void => {
    const parent = parentId ? nodes.get(parentId) : undefined;
    const selfId = node.kind === "span" ? node.span.span_id : undefined;
    const ok = parent !== undefined && (selfId === undefined || !cycles(parentId, selfId));
    (ok ? parent.children : roots).push(node);
  };
  for (const node of nodes.values()) place(node, node.span.parent_span_id);
  for (const event of events) {
    if (event.event_type === "model_request") {
      const agentName = modelCallAgentName(event.data, spans);
      place({ kind: "model_request", event, agentName, startNs: eventStartNs(event), children: [] }, parentOf(event));
    } else if (event.event_type === "reward") {
      place({ kind: "reward", event, startNs: eventStartNs(event), children: [] }, parentOf(event));
    }
  }
  return sortTree(roots);
}
