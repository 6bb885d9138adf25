/**
 * @module The OpenTelemetry variables of an agent process: a stock OTel SDK (Node, Python, …) configured only by
 * the environment exports its spans to the gateway's `/v1/traces`, tagged with the rollout and attempt.
 * @see OpenTelemetry SDK environment variables, "OTLP Exporter" and "General SDK configuration"
 */
import { ATTEMPT_ID_ATTRIBUTE, ROLLOUT_ID_ATTRIBUTE } from "../protocol/index.js";

/** `OTEL_SERVICE_NAME` when the controller's own environment sets none. */
export const DEFAULT_OTEL_SERVICE_NAME = "arclight-agent";

/** Percent-encodes a value of a `key=value,...` OTel list (W3C Baggage octets: no `,`, `;`, `=`, space, `%`). */
function listValue(value: string): string {
  return encodeURIComponent(value);
}

/**
 * The OTel variables for one attempt.
 * @param gatewayUrl - gateway base URL as agents reach it
 * @param key - the gateway key; empty sends no `Authorization` header
 * @param rolloutId - the rollout being run
 * @param attemptId - its current attempt
 * @param baseEnv - the inherited environment: its `OTEL_RESOURCE_ATTRIBUTES` are kept (ours appended, so they win),
 *   and its `OTEL_SERVICE_NAME`, `OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER` are left as they are
 * @returns `OTEL_EXPORTER_OTLP_ENDPOINT` (the SDKs append `/v1/traces`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 *   `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`, `OTEL_EXPORTER_OTLP_HEADERS` (`Authorization=Bearer …`),
 *   `OTEL_RESOURCE_ATTRIBUTES` (`arclight.rollout_id=…,arclight.attempt_id=…`), `OTEL_SERVICE_NAME`, and
 *   `OTEL_METRICS_EXPORTER`/`OTEL_LOGS_EXPORTER=none` unless set (the gateway receives traces only)
 */
export function otelEnv(
  gatewayUrl: string,
  key: string,
  rolloutId: string,
  attemptId: string,
  baseEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const root = gatewayUrl.replace(/\/+$/, "");
  const ours = `${ROLLOUT_ID_ATTRIBUTE}=${listValue(rolloutId)},${ATTEMPT_ID_ATTRIBUTE}=${listValue(attemptId)}`;
  const inherited = baseEnv.OTEL_RESOURCE_ATTRIBUTES?.trim();
  const env: Record<string, string> = {
    OTEL_EXPORTER_OTLP_ENDPOINT: root,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${root}/v1/traces`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    OTEL_RESOURCE_ATTRIBUTES: inherited ? `${inherited},${ours}` : ours,
    OTEL_SERVICE_NAME: baseEnv.OTEL_SERVICE_NAME || DEFAULT_OTEL_SERVICE_NAME,
    OTEL_METRICS_EXPORTER: baseEnv.OTEL_METRICS_EXPORTER || "none",
    OTEL_LOGS_EXPORTER: baseEnv.OTEL_LOGS_EXPORTER || "none",
  };
  if (key !== "") env.OTEL_EXPORTER_OTLP_HEADERS = `Authorization=${listValue(`Bearer ${key}`)}`;
  return env;
}
