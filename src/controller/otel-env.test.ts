import { describe, expect, it } from "vitest";
import { otelEnv } from "./otel-env.js";

describe("otelEnv", () => {
  it("points the OTLP exporter at the gateway with the key and tags the resource with rollout and attempt", () => {
    const env = otelEnv("http://127.0.0.1:8080/", "k 1", "r,1", "0", {});
    expect(env).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:8080",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:8080/v1/traces",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20k%201",
      OTEL_RESOURCE_ATTRIBUTES: "arclight.rollout_id=r%2C1,arclight.attempt_id=0",
      OTEL_SERVICE_NAME: "arclight-agent",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
    });
  });

  it("sends no Authorization header when the gateway has no key", () => {
    expect(otelEnv("http://g", "", "r", "0", {}).OTEL_EXPORTER_OTLP_HEADERS).toBeUndefined();
  });

  it("keeps the inherited resource attributes, service name and metric/log exporters", () => {
    const env = otelEnv("http://g", "", "r", "1", {
      OTEL_RESOURCE_ATTRIBUTES: "team=x",
      OTEL_SERVICE_NAME: "my-agent",
      OTEL_METRICS_EXPORTER: "prometheus",
    });
    expect(env.OTEL_RESOURCE_ATTRIBUTES).toBe("team=x,arclight.rollout_id=r,arclight.attempt_id=1");
    expect(env.OTEL_SERVICE_NAME).toBe("my-agent");
    expect(env.OTEL_METRICS_EXPORTER).toBe("prometheus");
    expect(env.OTEL_LOGS_EXPORTER).toBe("none");
  });
});
