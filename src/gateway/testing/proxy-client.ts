/** @module Small HTTP helpers for proxy tests: post a model call as an agent would, read SSE answers. */
import type { ProxyHarness } from "./proxy-harness.js";

/** One agent call's answer. */
export interface AgentAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body (non-stream) or undefined. */
  json: unknown;
  /** Data payloads of the SSE events (stream). */
  events: string[];
}

/**
 * Posts a model call to the proxy as an agent would (Bearer key), and reads the whole answer.
 * @param path - `chat/completions` or `completions` (or anything, for 404 tests)
 * @param body - object (sent as JSON) or a raw string
 */
export async function agentCall(
  h: ProxyHarness,
  rolloutId: string,
  path: string,
  body: unknown,
  opts: { attemptId?: string; mode?: string; key?: string | null } = {},
): Promise<AgentAnswer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const key = opts.key === undefined ? h.key : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${h.openaiBase(rolloutId, opts.attemptId, opts.mode)}/${path}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const isSse = (response.headers.get("content-type") ?? "").includes("text/event-stream");
  return {
    status: response.status,
    headers: response.headers,
    text,
    json: isSse ? undefined : tryJson(text),
    events: isSse ? sseData(text) : [],
  };
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Splits an SSE body into its `data:` payloads. */
export function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice(6));
}

/** A minimal chat body. */
export function chatRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: "agent-model", messages: [{ role: "user", content: "hi" }], ...extra };
}
