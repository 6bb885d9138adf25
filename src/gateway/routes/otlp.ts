/**
 * @module `POST /v1/traces`: the OTLP/HTTP trace receiver. Protobuf (`application/x-protobuf`) and JSON
 * (`application/json`) bodies, gzip or not, are decoded with the official schema and stored as `span` events of the
 * rollout their `arclight.rollout_id` attribute names; the reply is OTLP's `ExportTraceServiceResponse` in the
 * request's encoding, with `partial_success` counting the spans that were not stored.
 * @see OTLP specification, "OTLP/HTTP" (request, response, partial success, failures)
 */
import { gunzip } from "node:zlib";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { BadRequest, type SpanData } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { agentClaimsOf } from "../auth.js";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../json-depth.js";
import type { GatewayMetrics } from "../metrics.js";
import { decodeJsonSpans } from "../otlp/decode-json.js";
import { decodeProtobufSpans, encodeProtobufResponse } from "../otlp/decode-protobuf.js";
import { type IngestResult, ingestSpans } from "../otlp/ingest.js";
import { loadOtlpTraceSchema } from "../otlp/schema.js";

/** Options of {@link otlpRoutes}. */
export interface OtlpRoutesOptions {
  store: Store;
  /** Largest body accepted, compressed and decompressed alike, bytes (larger → 413). */
  bodyLimitBytes: number;
  /** `otlpSpans` counts spans by result and reason; late and stale writes go to the gateway's shared counters. */
  metrics: Pick<GatewayMetrics, "otlpSpans" | "lateEvents" | "staleWrites">;
}

const PROTOBUF = "application/x-protobuf";
const JSON_TYPE = "application/json";

/** A body that decompresses past the limit (HTTP 413); the error handler answers with its `statusCode`. */
class DecompressedTooLarge extends Error {
  readonly statusCode = 413;
  readonly code = "FST_ERR_CTP_BODY_TOO_LARGE";
  constructor(limitBytes: number) {
    super(`Request body is larger than ${limitBytes} bytes once decompressed`);
    this.name = "DecompressedTooLarge";
  }
}

/** An unsupported `content-encoding` (HTTP 415). */
class UnsupportedEncoding extends Error {
  readonly statusCode = 415;
  readonly code = "FST_ERR_CTP_INVALID_CONTENT_ENCODING";
  constructor(encoding: string) {
    super(`Unsupported content-encoding ${encoding} (expected gzip or none)`);
    this.name = "UnsupportedEncoding";
  }
}

/** The raw body, gunzipped when `content-encoding: gzip`, never past `limitBytes`. */
function inflate(encoding: string | undefined, body: Buffer, limitBytes: number): Promise<Buffer> {
  const name = (encoding ?? "identity").trim().toLowerCase();
  if (name === "identity" || name === "") return Promise.resolve(body);
  if (name !== "gzip") return Promise.reject(new UnsupportedEncoding(name));
  return new Promise((resolve, reject) => {
    gunzip(body, { maxOutputLength: limitBytes }, (err, out) => {
      if (!err) resolve(out);
      else if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        reject(new DecompressedTooLarge(limitBytes));
      else reject(new BadRequest(`Invalid gzip body: ${err.message}`));
    });
  });
}

function parseJsonBody(body: Buffer): unknown {
  const text = body.toString("utf8");
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH))
    throw new BadRequest(`JSON body nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadRequest(`Invalid JSON body: ${(err as Error).message}`);
  }
}

function countSpans(metrics: OtlpRoutesOptions["metrics"], result: IngestResult): void {
  if (result.accepted > 0) metrics.otlpSpans.inc({ result: "accepted", reason: "" }, result.accepted);
  for (const [reason, count] of Object.entries(result.rejected)) {
    metrics.otlpSpans.inc({ result: "rejected", reason }, count);
  }
  if (result.late > 0) metrics.lateEvents.inc(result.late);
  if (result.rejected.stale_attempt) metrics.staleWrites.inc({ route: "/v1/traces" });
}

/**
 * Mounts `POST /v1/traces`. In its own plugin scope, so its body parsers (raw buffers, gzip) leave the rest of
 * the gateway's JSON parsing alone.
 * @throws 400 malformed body, 413 too large (before or after gunzip), 415 other content type or encoding, 422 a JSON
 *   body that is not an `ExportTraceServiceRequest`; nothing is stored for any of them
 */
export const otlpRoutes: FastifyPluginAsync<OtlpRoutesOptions> = async (app, { store, bodyLimitBytes, metrics }) => {
  const schema = loadOtlpTraceSchema();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([PROTOBUF, JSON_TYPE], { parseAs: "buffer" }, (request, body, done) => {
    inflate(request.headers["content-encoding"], body as Buffer, bodyLimitBytes).then(
      (out) => done(null, out),
      (err: Error) => done(err, undefined),
    );
  });

  app.post("/v1/traces", { bodyLimit: bodyLimitBytes }, async (request: FastifyRequest, reply: FastifyReply) => {
    const isProtobuf = request.headers["content-type"]?.split(";", 1)[0]?.trim().toLowerCase() === PROTOBUF;
    const body = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
    const decoded: SpanData[] = isProtobuf ? decodeProtobufSpans(schema, body) : decodeJsonSpans(parseJsonBody(body));
    const agent = agentClaimsOf(request);
    const scope = agent ? { rolloutId: agent.rollout_id, attemptId: agent.attempt_id } : undefined;
    const result = await ingestSpans(store, decoded, scope);
    countSpans(metrics, result);
    const rejected = decoded.length - result.accepted;
    const message = result.messages.join("; ");
    if (rejected > 0) request.log.info({ accepted: result.accepted, rejected: result.rejected }, "spans rejected");
    if (isProtobuf) return reply.type(PROTOBUF).send(Buffer.from(encodeProtobufResponse(schema, rejected, message)));
    return rejected > 0 ? { partialSuccess: { rejectedSpans: String(rejected), errorMessage: message } } : {};
  });
};
