/**
 * @module Turns a gateway error answer (`{detail, code}` + HTTP status) back into the protocol error class the gateway
 * threw, so callers of `GatewayClient` catch `RolloutNotFound`, not "404".
 */
import {
  ArclightError,
  BadRequest,
  CallAborted,
  Conflict,
  Forbidden,
  InvalidTransition,
  NoEndpoint,
  NotFound,
  ResourceNotFound,
  RolloutFinished,
  RolloutNotFound,
  StaleAttempt,
  StoreUnavailable,
  Unauthorized,
  UpstreamFailed,
  UpstreamTimeout,
  ValidationFailed,
  type ValidationIssue,
} from "../protocol/index.js";

/** A gateway answer whose `code` names no protocol error class (e.g. a 500, or a Fastify 413). */
export class GatewayHttpError extends ArclightError {}

/** The gateway could not be reached (connection refused, reset, timed out) even after the client's retries. */
export class GatewayUnreachable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatewayUnreachable";
  }
}

/** A call on a {@link GatewayClient} after its `close()`: a programming error, thrown before any request is sent. */
export class GatewayClientClosed extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GatewayClientClosed";
  }
}

/** Error classes rebuilt from a body's `code`; their constructors are bypassed so the server's message is kept. */
const CLASSES_BY_CODE: Readonly<Record<string, new (...args: never[]) => ArclightError>> = Object.freeze({
  rollout_not_found: RolloutNotFound,
  resource_not_found: ResourceNotFound,
  invalid_transition: InvalidTransition,
  stale_attempt: StaleAttempt,
  rollout_finished: RolloutFinished,
  conflict: Conflict,
  validation_failed: ValidationFailed,
  no_endpoint: NoEndpoint,
  upstream_failed: UpstreamFailed,
  upstream_timeout: UpstreamTimeout,
  store_unavailable: StoreUnavailable,
  call_aborted: CallAborted,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  not_found: NotFound,
  bad_request: BadRequest,
});

/** Renders a `detail` (string or FastAPI validation items) as one message line. */
function detailMessage(detail: unknown, status: number): string {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((item) => {
        const issue = item as Partial<ValidationIssue>;
        const loc = Array.isArray(issue.loc) ? issue.loc.join(".") : "";
        return loc ? `${loc}: ${issue.msg ?? "invalid"}` : String(issue.msg ?? "invalid");
      })
      .join("; ");
  }
  return `gateway answered HTTP ${status}`;
}

/**
 * Rebuilds the error a gateway answer stands for.
 * @param status - HTTP status of the answer
 * @param body - the parsed JSON body (`{detail, code}`), or whatever the gateway sent
 * @param context - extra fields to attach, e.g. `{ rolloutId }` for `RolloutNotFound`
 * @returns an instance of the protocol class named by `body.code` (so `instanceof` works), keeping the server's
 *   message; a {@link GatewayHttpError} when the code is unknown or missing
 */
export function errorFromResponse(status: number, body: unknown, context: { rolloutId?: string } = {}): ArclightError {
  const record = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const code = typeof record.code === "string" ? record.code : `http_${status}`;
  const message = detailMessage(record.detail, status);
  const cls = CLASSES_BY_CODE[code];
  if (cls === undefined) return new GatewayHttpError(code, status, message);
  const err = new ArclightError(code, status, message);
  Object.setPrototypeOf(err, cls.prototype);
  err.name = cls.name;
  if (cls === ValidationFailed) {
    (err as unknown as { issues: unknown }).issues = Array.isArray(record.detail) ? record.detail : [];
  }
  if (cls === RolloutNotFound) (err as unknown as { rolloutId: unknown }).rolloutId = context.rolloutId ?? "";
  if (cls === StaleAttempt) {
    const current = record.current_attempt_id;
    (err as unknown as { currentAttemptId: unknown }).currentAttemptId = typeof current === "string" ? current : null;
  }
  return err;
}
