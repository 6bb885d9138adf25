/** @module The `AGL_*` variables the controller sets; the one SDK file that reads `process.env`. */

/** The rollout context of an agent process. */
export interface AgentEnv {
  /** OpenAI base URL of the gateway proxy for this attempt (`AGL_OPENAI_BASE_URL`). */
  baseURL: string;
  /** Key to present to the gateway, as the OpenAI API key and on event posts (`AGL_KEY`; may be empty). */
  apiKey: string;
  /** `AGL_ROLLOUT_ID`. */
  rolloutId: string;
  /** `AGL_ATTEMPT_ID`. */
  attemptId: string;
  /** Where events of this attempt are posted (`AGL_EVENT_URL`). */
  eventUrl: string;
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else the gateway's `/v1/traces`. */
  tracesUrl?: string;
  /** `OTEL_SERVICE_NAME`; the tracer uses `arclight-agent` when absent. */
  serviceName?: string;
}

/** The code runs outside a rollout: the controller's `AGL_*` variables are missing. */
export class NotInRollout extends Error {
  /** Names of the missing variables. */
  readonly missing: string[];
  constructor(missing: string[]) {
    super(
      `not running inside an arclight rollout: ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not set ` +
        "(the arclight controller sets AGL_OPENAI_BASE_URL, AGL_EVENT_URL, AGL_KEY, AGL_ROLLOUT_ID and AGL_ATTEMPT_ID)",
    );
    this.name = "NotInRollout";
    this.missing = missing;
  }
}

const REQUIRED = ["AGL_OPENAI_BASE_URL", "AGL_EVENT_URL", "AGL_ROLLOUT_ID", "AGL_ATTEMPT_ID"] as const;

/** Reads the rollout context. @throws {NotInRollout} naming every missing variable (`AGL_KEY` is optional) */
export function fromEnv(env: Readonly<Record<string, string | undefined>> = process.env): AgentEnv {
  const missing = REQUIRED.filter((name) => !env[name]);
  if (missing.length > 0) throw new NotInRollout(missing);
  return {
    baseURL: env.AGL_OPENAI_BASE_URL!,
    apiKey: env.AGL_KEY ?? "",
    rolloutId: env.AGL_ROLLOUT_ID!,
    attemptId: env.AGL_ATTEMPT_ID!,
    eventUrl: env.AGL_EVENT_URL!,
    tracesUrl: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || undefined,
    serviceName: env.OTEL_SERVICE_NAME || undefined,
  };
}

/** `env.tracesUrl`, else `<gateway>/v1/traces` derived from the event URL. */
export function tracesUrlOf(env: AgentEnv): string {
  if (env.tracesUrl) return env.tracesUrl;
  const at = env.eventUrl.lastIndexOf("/api/rollouts/");
  return `${at >= 0 ? env.eventUrl.slice(0, at) : new URL(env.eventUrl).origin}/v1/traces`;
}
