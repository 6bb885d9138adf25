/**
 * @module Request ids of one proxied call. Every upstream try gets its own id, `arclight-<process>-<call>-<try>`
 * (`<process>`: 16 random hex digits drawn once per gateway process; `<call>`: the process's call counter, base 36),
 * sent as the `x-request-id` header and as the body's `request_id` (vLLM names its request after the header, else
 * the body field, and rejects an id that is still running: an agent's id forwarded unchanged on every retry, or an
 * agent retrying its own call, would collide). The agent's own id (body `request_id`, else its `x-request-id` header) is
 * kept apart and recorded on the event as `agent_request_id`, where the triplet view uses it to recognise retries.
 * @see vLLM `OpenAIServing._base_request_id` (`X-Request-Id` header, else the body's `request_id`), v0.19.0
 */
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** The ids of one call's upstream tries. */
export interface UpstreamRequestIds {
  /** @returns the id of try `attempt` (0-based) */
  idOf(attempt: number): string;
  /**
   * The body of try `attempt`, from the body of try 0 (which carries `idOf(0)` as `request_id`).
   * @param firstBody - the JSON text sent on try 0
   * @param attempt - the try, 0-based
   */
  bodyOf(firstBody: string, attempt: number): string;
}

/** This process's part of every id: 64 random bits, so two gateway processes (or restarts) never share an id. */
const PROCESS_ID = randomBytes(8).toString("hex");
/** Calls this process has numbered: a counter, cheaper on the hot path than a fresh UUID per call. */
let callCount = 0;

/**
 * Fresh ids for one call's tries.
 * @returns ids that no other call shares: this process's random id and the call's number in it
 */
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
 * The agent's own request id, if it sent one.
 * @param body - the agent's parsed body
 * @param headers - the agent's request headers
 * @returns the body's string `request_id`, else the `x-request-id` header, else undefined
 */
export function agentRequestId(body: Record<string, unknown>, headers: IncomingHttpHeaders): string | undefined {
  if (typeof body.request_id === "string" && body.request_id !== "") return body.request_id;
  const header = headers["x-request-id"];
  return typeof header === "string" && header !== "" ? header : undefined;
}
