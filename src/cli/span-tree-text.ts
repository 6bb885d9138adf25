/**
 * @module Renders a span tree (`protocol/span-tree.ts`) as indented text for `arclight inspect --level spans`: spans
 * with duration, status and attributes; model calls with their agent, model, version, status, latency and token
 * counts; rewards with their value.
 */
import type { SpanTreeNode, TripletModelRequest } from "../protocol/index.js";
import { toTripletModelRequest } from "../protocol/index.js";

const MAX_ATTRIBUTES_CHARS = 160;

function ms(ns: bigint): string {
  return `${(Number(ns) / 1e6).toFixed(1)} ms`;
}

function attributesText(attributes: Record<string, unknown>): string {
  const shown = Object.entries(attributes).filter(([key]) => !key.startsWith("arclight."));
  if (shown.length === 0) return "";
  const text = JSON.stringify(Object.fromEntries(shown));
  return ` ${text.length > MAX_ATTRIBUTES_CHARS ? `${text.slice(0, MAX_ATTRIBUTES_CHARS - 1)}…` : text}`;
}

/** One line for one node, without its tree prefix. */
export function nodeLine(node: SpanTreeNode): string {
  if (node.kind === "span") {
    const { span } = node;
    const duration = ms(BigInt(span.end_time_unix_nano) - BigInt(span.start_time_unix_nano));
    const status = span.status.code === "error" ? ` ERROR ${span.status.message}` : "";
    return `${span.name} (${duration})${status}${attributesText(span.attributes)}`;
  }
  const data = node.event.data;
  if (node.kind === "reward") return `reward ${String(data.value)} #${node.event.sequence}`;
  const call: TripletModelRequest = toTripletModelRequest(data);
  const agent = node.agentName !== undefined ? ` agent=${node.agentName}` : "";
  const latency = typeof data.latency_ms === "number" ? ` ${data.latency_ms.toFixed(1)} ms` : "";
  return (
    `model_request #${node.event.sequence}${agent} ${call.server.model} v${call.server.version} ` +
    `${String(data.status ?? "?")}${latency} prompt ${call.prompt_token_ids.length} tok → ${call.response_token_ids.length} tok`
  );
}

/**
 * The tree as lines, drawn with box characters.
 * @param roots - root nodes from `buildSpanTree`
 * @returns one line per node, children indented under their parent
 */
export function renderSpanTree(roots: readonly SpanTreeNode[]): string[] {
  const lines: string[] = [];
  const walk = (nodes: readonly SpanTreeNode[], prefix: string, top: boolean): void => {
    nodes.forEach((node, index) => {
      const last = index === nodes.length - 1;
      const branch = top ? "" : last ? "└─ " : "├─ ";
      lines.push(`${prefix}${branch}${nodeLine(node)}`);
      walk(node.children, top ? "" : `${prefix}${last ? "   " : "│  "}`, false);
    });
  };
  walk(roots, "", true);
  return lines;
}
