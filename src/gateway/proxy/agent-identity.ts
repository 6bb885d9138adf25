/**
 * @module Which agent made a model call, and inside which span: read from the request before it is forwarded and
 * recorded on the `model_request` event (`agent_name`, `trace_context`). Sources, first match wins:
 * 1. the path segment `…/mode/{mode}/agent/{name}/openai/v1` (moved into the header by {@link agentPathRewrite});
 * 2. the `x-arclight-agent` header;
 * 3. the gateway's `agent_models` map from the requested model name.
 * A call with none of them may still get its agent from its enclosing span (`gen_ai.agent.name`) when the events are
 * read: see `protocol/agent-name.ts`.
 */
import type { IncomingMessage } from "node:http";
import { BadRequest, parseTraceParent } from "../../protocol/index.js";

/** Header naming the agent of a model call. */
export const AGENT_HEADER = "x-arclight-agent";

/** What the proxy records about a call's origin. Fields are absent when unknown. */
export interface CallIdentity {
  /** The agent that made the call. */
  agent_name?: string;
  /** The caller's W3C trace context: the span enclosing the call. */
  trace_context?: { traceparent: string; trace_id: string; span_id: string };
}

const AGENT_PATH = /^(\/proxy\/rollout\/[^/?#]+\/attempt\/[^/?#]+\/mode\/[^/?#]+)\/agent\/([^/?#]+)(\/.*)$/;
const MAX_AGENT_NAME_CHARS = 200;

/**
 * Fastify `rewriteUrl`: `…/mode/{mode}/agent/{name}/rest` → `…/mode/{mode}/rest`, with the name moved into the
 * {@link AGENT_HEADER} header (replacing any the client sent: the path is the more specific choice), so every proxy
 * route serves both forms unchanged.
 * @param request - the raw request; its headers may be changed
 * @returns the URL to route
 */
export function agentPathRewrite(request: IncomingMessage): string {
  const url = request.url ?? "/";
  const match = AGENT_PATH.exec(url);
  if (!match) return url;
  let name = match[2]!;
  try {
    name = decodeURIComponent(name);
  } catch {
    // A malformed escape is kept as written; the name check below still applies.
  }
  request.headers[AGENT_HEADER] = name;
  return match[1]! + match[3]!;
}

/**
 * The identity of one call.
 * @param headers - the request headers (`x-arclight-agent`, `traceparent`)
 * @param requestedModel - the `model` the agent asked for, before any rewrite
 * @param agentModels - model name → agent name (gateway config `agent_models`)
 * @returns the fields to record; a malformed `traceparent` is ignored (it is the agent's tracing, not its call)
 * @throws {BadRequest} an agent name that is empty after trimming, longer than 200 characters or holds control characters
 */
export function callIdentity(
  headers: IncomingMessage["headers"],
  requestedModel: unknown,
  agentModels: Readonly<Record<string, string>>,
): CallIdentity {
  const identity: CallIdentity = {};
  const header = headers[AGENT_HEADER];
  const named = Array.isArray(header) ? header[0] : header;
  if (named !== undefined) identity.agent_name = checkAgentName(named);
  else if (typeof requestedModel === "string" && Object.hasOwn(agentModels, requestedModel)) {
    identity.agent_name = agentModels[requestedModel];
  }
  const traceparent = typeof headers.traceparent === "string" ? headers.traceparent : undefined;
  const parsed = parseTraceParent(traceparent);
  if (parsed)
    identity.trace_context = { traceparent: traceparent!.trim(), trace_id: parsed.trace_id, span_id: parsed.span_id };
  return identity;
}

function checkAgentName(raw: string): string {
  const name = raw.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (name === "" || name.length > MAX_AGENT_NAME_CHARS || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new BadRequest(
      `Agent name must be 1-${MAX_AGENT_NAME_CHARS} printable characters (path segment or ${AGENT_HEADER})`,
    );
  }
  return name;
}
