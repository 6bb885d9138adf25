/** @module The types of one proxied call and of what every call shares, used by the forwarder, relay and recorder. */
import type { FastifyBaseLogger } from "fastify";
import type { Store } from "../../store/store.js";
import type { TokenizerFolders } from "../../wire/tokenizer-folder.js";
import type { CallIdentity } from "./agent-identity.js";
import type { CallAbort, InflightCalls } from "./call-lifetime.js";
import type { ProxyEndpointKind } from "./capture.js";
import type { ProxyLookups } from "./lookups.js";
import type { ProxyOptions } from "./options.js";
import type { AgentBody, ProxyMode } from "./rewrite.js";
import type { CallTranslation } from "./translate/translation.js";
import type { UpstreamClient } from "./upstream.js";

/** What every call shares: set up once by the route plugin. */
export interface ProxyContext {
  store: Store;
  /** Cached rollout and endpoint reads (see `lookups.ts`). */
  lookups: ProxyLookups;
  options: ProxyOptions;
  upstream: UpstreamClient;
  /** Tokenizer folders of `tito` models, each read once. */
  tokenizers: TokenizerFolders;
  /** The model name a call's agent is routed to (`agent_routes`, `agent-route.ts`); absent: no routing. */
  routeAgent?: (agentName: string | undefined) => string | undefined;
  /** The calls in flight, for the drain deadline (see `call-lifetime.ts`). */
  inflight: InflightCalls;
}

/** One agent call. */
export interface ProxyCall {
  kind: ProxyEndpointKind;
  rolloutId: string;
  attemptId: string;
  mode: ProxyMode;
  /**
   * The agent's JSON body: its text, forwarded with only the proxy's fields changed, and the parsed object (for a
   * translated API, the chat body it was translated to, and that body's JSON text).
   */
  body: AgentBody;
  log: FastifyBaseLogger;
  /** Set when the agent speaks another API (Responses, Anthropic Messages): how to answer it. */
  translation?: CallTranslation;
  /** Agent name and trace context, recorded on the event (`agent-identity.ts`). */
  identity?: CallIdentity;
  /** The agent's own request id (body `request_id` or `x-request-id` header), recorded as `agent_request_id`. */
  agentRequestId?: string;
}

/**
 * A call under way: the request ids recorded on its event (see `request-ids.ts`) and the signal that aborts it (the
 * agent hung up, the total deadline passed, or the drain deadline; see `call-lifetime.ts`).
 */
export type TrackedCall = ProxyCall & {
  requestIds: { agent_request_id?: string; upstream_request_id: string };
  signal: CallAbort;
};
