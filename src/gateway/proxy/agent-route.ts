/**
 * @module Routing by agent (gateway config `agent_routes`): a call whose agent matches an entry is served by the
 * endpoints registered under that entry's model name instead of the proxy's, e.g. frozen agents of a multi-agent
 * workflow answered by a snapshot of the starting weights while the trained agents get each update.
 */
import { agentFilter } from "../../protocol/agent-match.js";
import type { ProxyOptions } from "./options.js";

/** Agent name (or `/regex/`) → model name the call is looked up and sent upstream as. */
export type AgentRoutes = Readonly<Record<string, string>>;

/**
 * Compiles the routes once.
 * @param routes - entries in config order; the first that matches wins
 * @returns agent name → routed model name, or undefined when no entry matches (or the call names no agent)
 * @throws {SyntaxError} for a `/regex/` entry that does not compile (the config schema refuses it first)
 */
export function agentRouter(routes: AgentRoutes): (agentName: string | undefined) => string | undefined {
  const compiled = Object.entries(routes).map(([entry, model]) => ({ matches: agentFilter([entry]), model }));
  return (agentName) => compiled.find((route) => route.matches(agentName))?.model;
}

/**
 * The proxy options for one call: the routed model name in place of `modelName` when the call's agent is routed.
 * @param options - the proxy's options
 * @param routedModel - what {@link agentRouter} gave the call's agent
 * @returns `options` itself, or a copy naming the routed model
 */
export function routedOptions(options: ProxyOptions, routedModel: string | undefined): ProxyOptions {
  return routedModel === undefined ? options : { ...options, modelName: routedModel };
}
