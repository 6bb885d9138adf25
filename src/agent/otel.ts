/** @module `setupOpenTelemetry()`: the real OTel JS SDK (optional peers, loaded only here) exporting to the gateway. */
import { type AgentEnv, fromEnv, tracesUrlOf } from "./env.js";

/** The OTel set-up of an agent process. */
export interface OpenTelemetrySetup {
  /** The registered `NodeTracerProvider` (global): `trace.getTracer(...)` from `@opentelemetry/api` now exports here. */
  provider: unknown;
  /** Exports every span ended so far. */
  forceFlush(): Promise<void>;
  /** Exports what is left and stops; call before the agent exits. */
  shutdown(): Promise<void>;
}

/** Options of {@link setupOpenTelemetry}. */
export interface OpenTelemetryOptions {
  /** Rollout context; default {@link fromEnv}(). */
  env?: AgentEnv;
  /** `service.name`; default `OTEL_SERVICE_NAME`, else `arclight-agent`. */
  serviceName?: string;
}

const PACKAGES =
  "@opentelemetry/api@1.9 @opentelemetry/sdk-trace-node@2.12 @opentelemetry/exporter-trace-otlp-proto@0.223 @opentelemetry/resources@2.12";

async function loadSdk() {
  try {
    const [node, exporter, resources] = await Promise.all([
      import("@opentelemetry/sdk-trace-node"),
      import("@opentelemetry/exporter-trace-otlp-proto"),
      import("@opentelemetry/resources"),
    ]);
    return { node, exporter, resources };
  } catch (cause) {
    throw new Error(`setupOpenTelemetry() needs the OpenTelemetry SDK: npm install ${PACKAGES}`, { cause });
  }
}

/**
 * Registers a global `NodeTracerProvider` exporting OTLP/protobuf to the gateway, as the controller's `OTEL_*`
 * variables would. @throws {NotInRollout} or `Error` naming the missing OpenTelemetry packages
 */
export async function setupOpenTelemetry(options: OpenTelemetryOptions = {}): Promise<OpenTelemetrySetup> {
  const env = options.env ?? fromEnv();
  const { node, exporter, resources } = await loadSdk();
  const headers: Record<string, string> = env.apiKey !== "" ? { authorization: `Bearer ${env.apiKey}` } : {};
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({
      "service.name": options.serviceName ?? env.serviceName ?? "arclight-agent",
      "arclight.rollout_id": env.rolloutId,
      "arclight.attempt_id": env.attemptId,
    }),
    spanProcessors: [new node.BatchSpanProcessor(new exporter.OTLPTraceExporter({ url: tracesUrlOf(env), headers }))],
  });
  provider.register();
  return { provider, forceFlush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}
