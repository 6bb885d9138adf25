/**
 * @module One model call as the proxy holds it, what it reads from the agent's request and what it sends upstream:
 * the call's types, the calling agent and its trace context, the request ids of each upstream try, and the body with the proxy's fields spliced into the agent's text.
 * Every other byte of the agent's body is forwarded untouched (integers beyond 2^53, key order, whitespace).
 */
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import { agentFilter } from "../../protocol/agent-match.js";
import { BadRequest, parseTraceParent } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import type { TokenizerFolders } from "../../wire/tokenizer-folder.js";
import type { CallAbort, InflightCalls } from "./call-lifetime.js";
import type { ProxyLookups } from "./lookups.js";
import type { ProxyOptions } from "./options.js";
import type { CallTranslation } from "./translate/translation.js";
import type { UpstreamClient } from "./upstream.js";

/** Which upstream endpoint a call targets. */
export type ProxyEndpointKind = "chat" | "completions";

/** What every call shares: set up once per gateway by {@link ProxyService}. */
export interface ProxyContext {
  store: Store;
  lookups: ProxyLookups;
  options: ProxyOptions;
  upstream: UpstreamClient;
  /** Tokenizer folders of `tito` models, each read once. */
  tokenizers: TokenizerFolders;
  /** The model name a call's agent is routed to (`agent_routes`); absent: no routing. */
  routeAgent?: (agentName: string | undefined) => string | undefined;
  inflight: InflightCalls;
}

/** One agent call. */
export interface ProxyCall {
  kind: ProxyEndpointKind;
  rolloutId: string;
  attemptId: string;
  mode: ProxyMode;
  /** The agent's JSON text and object; for a translated API, the chat body it was translated to. */
  body: AgentBody;
  log: FastifyBaseLogger;
  /** Set when the agent speaks another API (Responses, Anthropic Messages): how to answer it. */
  translation?: CallTranslation;
  identity?: CallIdentity;
  /** The agent's own request id, recorded as `agent_request_id`. */
  agentRequestId?: string;
}

/** A call under way: the request ids recorded on its event, and the signal that aborts it. */
export type TrackedCall = ProxyCall & {
  requestIds: { agent_request_id?: string; upstream_request_id: string };
  signal: CallAbort;
};

/** The body sent upstream, and when the call began. */
export interface CallBase {
  kind: ProxyEndpointKind;
  model: string;
  request: Record<string, unknown>;
  /** The text sent upstream; `request` is its value. */
  requestText: string;
  startedAt: number;
}

/** `train` calls produce training data; `val` calls are evaluation (AGL v1.0 proxy path segment). */
export type ProxyMode = "train" | "val";

/** Header naming the agent of a model call. */
export const AGENT_HEADER = "x-arclight-agent";

/** What the proxy records about a call's origin (`agent_name`, `trace_context`); fields are absent when unknown. */
export interface CallIdentity {
  agent_name?: string;
  /** The caller's W3C trace context: the span enclosing the call. */
  trace_context?: { traceparent: string; trace_id: string; span_id: string };
}

const AGENT_PATH = /^(\/proxy\/rollout\/[^/?#]+\/attempt\/[^/?#]+\/mode\/[^/?#]+)\/agent\/([^/?#]+)(\/.*)$/;
const MAX_AGENT_NAME_CHARS = 200;

/**
 * Fastify `rewriteUrl`: `…/mode/{mode}/agent/{name}/rest` → `…/mode/{mode}/rest`, the name moved into the
 * {@link AGENT_HEADER} header (replacing the client's: the path is the more specific choice).
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
    // A malformed escape is kept as written; the name check still applies.
  }
  request.headers[AGENT_HEADER] = name;
  return match[1]! + match[3]!;
}

/**
 * The identity of one call: the agent from the {@link AGENT_HEADER} header (set from the path by
 * {@link agentPathRewrite}), else from `agentModels` by the requested model; the trace context from `traceparent`.
 * A call with neither may still get its agent from its enclosing span when events are read (`protocol/agent-name.ts`).
 * @param headers - the request headers
 * @param requestedModel - the `model` the agent asked for, before any rewrite
 * @param agentModels - model name → agent name (gateway config `agent_models`)
 * @returns the fields to record; a malformed `traceparent` is ignored
 * @throws {BadRequest} an agent name that is empty, longer than 200 characters or holds control characters
 */
export function callIdentity(
  headers: IncomingHttpHeaders,
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

/** @returns the value of a JSON text, undefined when it is not JSON */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

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

/** @returns `options` itself, or a copy naming `routedModel` as `modelName` when the call's agent is routed */
export function routedOptions(options: ProxyOptions, routedModel: string | undefined): ProxyOptions {
  return routedModel === undefined ? options : { ...options, modelName: routedModel };
}

/**
 * The ids of one call's upstream tries, `arclight-<process>-<call>-<try>`, sent as `x-request-id` and as the body's
 * `request_id`: vLLM rejects an id that is still running, so an agent's id forwarded on every retry would collide.
 * @see vLLM `OpenAIServing._base_request_id` (`X-Request-Id` header, else the body's `request_id`), v0.19.0
 */
export interface UpstreamRequestIds {
  /** @returns the id of try `attempt` (0-based) */
  idOf(attempt: number): string;
  /** The body of try `attempt`, from the body of try 0 (which carries `idOf(0)` as `request_id`). */
  bodyOf(firstBody: string, attempt: number): string;
}

/** 64 random bits per process, so two gateway processes (or restarts) never share an id. */
const PROCESS_ID = randomBytes(8).toString("hex");
let callCount = 0;

/** @returns ids that no other call shares: this process's random id and the call's number in it */
export function upstreamRequestIds(): UpstreamRequestIds {
  callCount++;
  const base = `arclight-${PROCESS_ID}-${callCount.toString(36)}`;
  const idOf = (attempt: number): string => `${base}-${attempt}`;
  return {
    idOf,
    // No other call has this id, so its quoted text occurs in the body exactly once: where the proxy put it.
    bodyOf: (firstBody, attempt) =>
      attempt === 0 ? firstBody : firstBody.replace(JSON.stringify(idOf(0)), JSON.stringify(idOf(attempt))),
  };
}

/**
 * The agent's own request id, recorded as `agent_request_id` (the triplet view recognises retries by it).
 * @returns the body's string `request_id`, else the `x-request-id` header, else undefined
 */
export function agentRequestId(body: Record<string, unknown>, headers: IncomingHttpHeaders): string | undefined {
  if (typeof body.request_id === "string" && body.request_id !== "") return body.request_id;
  const header = headers["x-request-id"];
  return typeof header === "string" && header !== "" ? header : undefined;
}

/** The agent's body as received: its exact text and the parsed object. */
export interface AgentBody {
  text: string;
  value: Record<string, unknown>;
}

/** The upstream body: the text sent and the equal object (numbers beyond 2^53 rounded, as JavaScript holds them). */
export interface UpstreamBody {
  text: string;
  value: Record<string, unknown>;
}

/**
 * The fields the proxy sets on a call: `model`, `temperature`, `return_token_ids` and, in train mode, `logprobs`.
 * @param kind - chat or completions (completions' `logprobs` is an integer n; a positive n the agent chose is kept)
 * @param body - the agent's parsed body; not mutated
 * @param mode - train or val
 * @param options - model name, temperatures, include-log-probs
 * @returns field name to value; `model` is the configured name, or the agent's own when none is configured
 * @throws {BadRequest} no model name configured and no string `model` in the body, or `n > 1` in train mode
 */
export function proxyFields(
  kind: ProxyEndpointKind,
  body: Record<string, unknown>,
  mode: ProxyMode,
  options: ProxyOptions,
): Record<string, unknown> {
  const model = options.modelName !== "" ? options.modelName : body.model;
  if (typeof model !== "string" || model === "") {
    throw new BadRequest("Request body needs a non-empty string `model` (no model name is configured on the gateway)");
  }
  if (mode === "train" && typeof body.n === "number" && body.n > 1) {
    throw new BadRequest(
      `n = ${body.n} is refused on train-mode calls: a rollout's reward scores the one choice the agent continued ` +
        "with; sample several rollouts (the trainer's group size n) instead, or call in val mode",
    );
  }
  const fields: Record<string, unknown> = { model };
  fields.temperature = mode === "train" ? options.trainTemperature : options.valTemperature;
  fields.return_token_ids = true;
  if (mode === "train" && options.includeLogProbs) {
    const keepN = kind === "completions" && typeof body.logprobs === "number" && body.logprobs >= 1;
    fields.logprobs = keepN ? body.logprobs : true;
  }
  return fields;
}

/**
 * The upstream body: {@link proxyFields} (and `requestId` as `request_id`) spliced into the agent's text.
 * @throws {BadRequest} as {@link proxyFields}
 */
export function rewriteRequestBody(
  kind: ProxyEndpointKind,
  body: AgentBody,
  mode: ProxyMode,
  options: ProxyOptions,
  requestId?: string,
): UpstreamBody {
  const fields = proxyFields(kind, body.value, mode, options);
  if (requestId !== undefined) fields.request_id = requestId;
  return { text: setFields(body.text, fields), value: Object.assign({}, body.value, fields) };
}

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const COMMA = 0x2c; // ,
const COLON = 0x3a; // :

/** One top-level member of the object text: `"key": value`, as offsets into the text. */
interface Member {
  key: string;
  /** Offset of the key's opening quote. */
  start: number;
  /** Offset of the first character of the value. */
  valueStart: number;
  /** Offset just past the value. */
  valueEnd: number;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** `i` at an opening quote; @returns the offset just past the closing quote. */
function skipString(text: string, i: number): number {
  let j = i;
  for (;;) {
    j = text.indexOf('"', j + 1);
    if (j === -1) throw new TypeError("Unterminated string in JSON text");
    let backslashes = 0;
    while (text.charCodeAt(j - 1 - backslashes) === BACKSLASH) backslashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return j + 1;
  }
}

/** `i` at an opening bracket; @returns the offset just past its matching bracket (strings skipped). */
function skipContainer(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) j = skipString(text, j) - 1;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return j + 1;
  }
  throw new TypeError("Unterminated array or object in JSON text");
}

/** `i` at the first character of a value; @returns the offset just past it. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return skipContainer(text, i);
  let j = i;
  // A number or a literal (true, false, null) runs to the next separator.
  for (; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break;
  }
  if (j === i) throw new TypeError(`Expected a JSON value at offset ${i}`);
  return j;
}

/** The top-level members of an object text, and the offset of its closing brace. */
function scanObject(text: string): { members: Member[]; close: number } {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) throw new TypeError("JSON text is not an object");
  i = skipSpace(text, i + 1);
  const members: Member[] = [];
  if (text.charCodeAt(i) === CLOSE_OBJECT) return { members, close: i };
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) throw new TypeError(`Expected a key at offset ${i}`);
    const keyEnd = skipString(text, i);
    const rawKey = text.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes("\\") ? (JSON.parse(text.slice(i, keyEnd)) as string) : rawKey;
    let j = skipSpace(text, keyEnd);
    if (text.charCodeAt(j) !== COLON) throw new TypeError(`Expected ':' at offset ${j}`);
    const valueStart = skipSpace(text, j + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, start: i, valueStart, valueEnd });
    j = skipSpace(text, valueEnd);
    const c = text.charCodeAt(j);
    if (c === CLOSE_OBJECT) return { members, close: j };
    if (c !== COMMA) throw new TypeError(`Expected ',' or '}' at offset ${j}`);
    i = skipSpace(text, j + 1);
  }
}

/**
 * Sets top-level fields of a JSON object text, keeping every other byte: a present field keeps its place (every
 * occurrence of a duplicated key), a new one is appended in the order of `fields`, `undefined` removes it.
 *
 * Example: `setFields('{"seed": 12345678901234567890, "model":"x"}', { model: "policy", logprobs: true })` gives
 * `'{"seed": 12345678901234567890, "model":"policy","logprobs":true}'`.
 * @param rawBody - JSON text whose top level is an object (already validated by a parser)
 * @param fields - field name to new value; `undefined` removes the field
 * @returns the edited text; `rawBody` itself when `fields` is empty
 * @throws {TypeError} when `rawBody` is not the text of a JSON object
 */
export function setFields(rawBody: string, fields: Readonly<Record<string, unknown>>): string {
  const names = Object.keys(fields);
  if (names.length === 0) return rawBody;
  const { members, close } = scanObject(rawBody);
  const present = new Set<string>();
  const kept: string[] = [];
  // The original separator after each kept member (a comma and any whitespace), so an untouched body is unchanged.
  const separators: string[] = [];
  for (let k = 0; k < members.length; k++) {
    const m = members[k]!;
    const next = members[k + 1];
    const separator = next ? rawBody.slice(m.valueEnd, next.start) : ",";
    if (!Object.hasOwn(fields, m.key)) {
      kept.push(rawBody.slice(m.start, m.valueEnd));
      separators.push(separator);
      continue;
    }
    present.add(m.key);
    const value = fields[m.key];
    if (value === undefined) continue;
    kept.push(rawBody.slice(m.start, m.valueStart) + JSON.stringify(value));
    separators.push(separator);
  }
  for (const name of names) {
    if (present.has(name) || fields[name] === undefined) continue;
    kept.push(`${JSON.stringify(name)}:${JSON.stringify(fields[name])}`);
    separators.push(",");
  }
  const head = members.length > 0 ? rawBody.slice(0, members[0]!.start) : rawBody.slice(0, close);
  const tail = members.length > 0 ? rawBody.slice(members.at(-1)!.valueEnd) : rawBody.slice(close);
  let out = head;
  kept.forEach((member, k) => {
    out += (k > 0 ? separators[k - 1] : "") + member;
  });
  return out + tail;
}
