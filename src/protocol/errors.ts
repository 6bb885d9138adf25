/** @module The errors that reach the wire: each has a stable `code` and the HTTP `status` the gateway answers with. */

import { MAX_MODEL_NAME_CHARS } from "./model.js";
import { quoteStart } from "./text.js";

/** Base class of every error crossing a component boundary; the gateway answers `status` + `{ detail, code }`. */
export class ArclightError extends Error {
  /** Stable machine-readable name, e.g. `rollout_not_found`. */
  readonly code: string;
  /** HTTP status the gateway answers with. */
  readonly status: number;
  /** Extra fields of the error body beside `detail` and `code` (wire names), e.g. `current_attempt_id`. */
  readonly fields: Readonly<Record<string, unknown>>;

  constructor(
    code: string,
    status: number,
    message: string,
    options?: { cause?: unknown; fields?: Record<string, unknown> },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.fields = options?.fields ?? {};
  }
}

/** Longest rollout id quoted whole (the protocol's limit); longer ones are quoted by their start and length. */
const MAX_QUOTED_ID = 200;

/** A rollout id that the store does not hold (HTTP 404). */
export class RolloutNotFound extends ArclightError {
  /** The unknown rollout id. */
  readonly rolloutId: string;
  constructor(rolloutId: string) {
    super("rollout_not_found", 404, `Rollout ${quoteStart(rolloutId, MAX_QUOTED_ID)} not found`);
    this.rolloutId = rolloutId;
  }
}

/** A resource name, or a version of it, that the store does not hold (HTTP 404). */
export class ResourceNotFound extends ArclightError {
  constructor(name: string, version?: number) {
    super(
      "resource_not_found",
      404,
      version === undefined ? `Resource ${name} not found` : `Resource ${name}: version ${version} not found`,
    );
  }
}

/** A status change the rollout state machine forbids, e.g. `succeeded -> running` (HTTP 409). */
export class InvalidTransition extends ArclightError {
  constructor(rolloutId: string, from: string, to: string) {
    super("invalid_transition", 409, `Rollout ${rolloutId}: cannot transition ${from} -> ${to}`);
  }
}

/** A write aimed at a superseded attempt (HTTP 409); the body names `current_attempt_id`. */
export class StaleAttempt extends ArclightError {
  /** The attempt that is current now: a controller that missed a retry can recover by running it. */
  readonly currentAttemptId: string | null;
  constructor(rolloutId: string, attemptId: string, currentAttemptId: string | null) {
    super(
      "stale_attempt",
      409,
      `Rollout ${rolloutId}: attempt ${attemptId} was superseded (current: ${currentAttemptId ?? "none"})`,
      { fields: { rollout_id: rolloutId, attempt_id: attemptId, current_attempt_id: currentAttemptId } },
    );
    this.currentAttemptId = currentAttemptId;
  }
}

/** A write aimed at a `succeeded` or `failed` rollout (HTTP 409): terminal rollouts are final. */
export class RolloutFinished extends ArclightError {
  constructor(rolloutId: string, state: string) {
    super("rollout_finished", 409, `Rollout ${rolloutId} is ${state}: no more writes`);
  }
}

/** A write that conflicts with stored data in a way other than a state transition (HTTP 409). */
export class Conflict extends ArclightError {
  constructor(message: string) {
    super("conflict", 409, message);
  }
}

/** One problem found while validating input; the FastAPI `detail` item shape AGL clients parse. */
export interface ValidationIssue {
  /** Path to the bad field, e.g. `["body", 0, "config", "timeout_seconds"]`. */
  loc: (string | number)[];
  /** Human-readable message. */
  msg: string;
  /** Machine-readable kind, e.g. `invalid_type`, `unrecognized_keys`. */
  type: string;
}

/** Input that violates a schema (HTTP 422). `issues` lists every problem, in the FastAPI `detail` item shape. */
export class ValidationFailed extends ArclightError {
  /** Every problem found, in the FastAPI `detail` item shape. */
  readonly issues: ValidationIssue[];
  constructor(message: string, issues: ValidationIssue[]) {
    super("validation_failed", 422, message);
    this.issues = issues;
  }
}

/** No endpoint serves a proxied call (HTTP 503); the message says how to fix it, since OpenAI clients retry 503s. */
export class NoEndpoint extends ArclightError {
  /** @param model - the model name looked up (the agent's, or the gateway's `model_name`); quoted by its start when long */
  constructor(model: string) {
    const fix =
      model.length > MAX_MODEL_NAME_CHARS
        ? `no model name over ${MAX_MODEL_NAME_CHARS} characters can be registered: check the model the agent asks for`
        : `register an endpoint with POST /api/models [{"model": ${JSON.stringify(model)}, "endpoint": ` +
          `"http://HOST:PORT/v1"}]`;
    super(
      "no_endpoint",
      503,
      `No endpoint is registered for model ${quoteStart(model, 200)}: ${fix}, or start the gateway with ` +
        "--model-name set to a registered model",
    );
  }
}

/** The upstream model server failed or could not be reached (HTTP 502). */
export class UpstreamFailed extends ArclightError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("upstream_failed", 502, message, options);
  }
}

/** The upstream model server did not answer in time (HTTP 504). */
export class UpstreamTimeout extends ArclightError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("upstream_timeout", 504, message, options);
  }
}

/** A proxied call cut short by a pause's drain deadline (HTTP 503 with `Retry-After`). */
export class CallAborted extends ArclightError {
  constructor(message: string, retryAfterSeconds: number, options?: { cause?: unknown }) {
    super("call_aborted", 503, message, { cause: options?.cause, fields: { retry_after_seconds: retryAfterSeconds } });
  }
}

/** The database is unreachable or broke before confirming a write (HTTP 503): it may have committed, so retry. */
export class StoreUnavailable extends ArclightError {
  /** `retryAfterSeconds` (default 1) goes out as `Retry-After` and `retry_after_seconds`. */
  constructor(message: string, options?: { cause?: unknown; retryAfterSeconds?: number }) {
    const retryAfterSeconds = options?.retryAfterSeconds ?? 1;
    super("store_unavailable", 503, message, {
      cause: options?.cause,
      fields: { retry_after_seconds: retryAfterSeconds },
    });
  }
}

/** Too many wrong keys from one client address at the dashboard login (HTTP 429 with `Retry-After`). */
export class LoginThrottled extends ArclightError {
  /** @param retryAfterSeconds - when this address may try again, seconds */
  constructor(retryAfterSeconds: number) {
    super("login_throttled", 429, `Too many wrong keys from this address; try again in ${retryAfterSeconds} s`, {
      fields: { retry_after_seconds: retryAfterSeconds },
    });
  }
}

/** Missing or wrong API key (HTTP 401). */
export class Unauthorized extends ArclightError {
  constructor(message = "Missing or invalid API key") {
    super("unauthorized", 401, message);
  }
}

/** A valid credential that does not allow this request, e.g. an agent token on an admin route (HTTP 403). */
export class Forbidden extends ArclightError {
  constructor(message: string) {
    super("forbidden", 403, message);
  }
}

/** A path or resource the gateway does not serve (HTTP 404). */
export class NotFound extends ArclightError {
  constructor(message: string) {
    super("not_found", 404, message);
  }
}

/** Malformed request that is not a schema violation, e.g. invalid JSON (HTTP 400). */
export class BadRequest extends ArclightError {
  constructor(message: string) {
    super("bad_request", 400, message);
  }
}
