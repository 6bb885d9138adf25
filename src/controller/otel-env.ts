/**
 * @module OTel variables so a stock SDK configured by environment exports the agent's spans to the gateway.
 * @see OpenTelemetry SDK environment variables, "OTLP Exporter"
 */
import { ATTEMPT_ID_ATTRIBUTE, ROLLOUT_ID_ATTRIBUTE } from "../protocol/index.js";

/** `OTEL_SERVICE_NAME` when the controller's own environment sets none. */
export const DEFAULT_OTEL_SERVICE_NAME = "arclight-agent";

/** Percent-encodes a value of a `key=value,...` OTel list (W3C Baggage octets: no `,`, `;`, `=`, space, `%`). */
function listValue(value: string): string {
  return encodeURIComponent(value);
}

/**
 * The OTLP exporter variables for one attempt (http/protobuf, bearer header, rollout and attempt resource attributes
 * appended so they win); metrics and logs exporters `none` unless set, since the gateway takes traces only.
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
