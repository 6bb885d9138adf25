/**
 * @module The official OTLP trace schema, loaded with protobufjs from the `.proto` files in `proto/` (see
 * `proto/README.md`), plus the partial-success reply that OTLP 1.0 added to `ExportTraceServiceResponse`.
 */
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

/** Folder holding `opentelemetry/proto/...`; the same relative place from `src/gateway/otlp` and `dist/gateway/otlp`. */
const PROTO_ROOT = fileURLToPath(new URL("../../../proto/", import.meta.url));
const SERVICE_PROTO = "opentelemetry/proto/collector/trace/v1/trace_service.proto";
const PACKAGE = "opentelemetry.proto.collector.trace.v1";

/** The two messages of `POST /v1/traces`. */
export interface OtlpTraceSchema {
  /** `ExportTraceServiceRequest`: `resource_spans` → `scope_spans` → `spans`. */
  request: protobuf.Type;
  /** `ExportTraceServiceResponse` with `partial_success { rejected_spans, error_message }`. */
  response: protobuf.Type;
}

/**
 * Adds `ExportTracePartialSuccess` and `ExportTraceServiceResponse.partial_success` (field 1), absent from the
 * shipped revision of the schema.
 * @see OTLP specification 1.0, "Partial Success"; opentelemetry-proto `collector/trace/v1/trace_service.proto`
 */
function addPartialSuccess(root: protobuf.Root): protobuf.Type {
  const namespace = root.lookup(PACKAGE) as protobuf.Namespace;
  const partial = new protobuf.Type("ExportTracePartialSuccess")
    .add(new protobuf.Field("rejectedSpans", 1, "int64"))
    .add(new protobuf.Field("errorMessage", 2, "string"));
  namespace.add(partial);
  const response = root.lookupType(`${PACKAGE}.ExportTraceServiceResponse`);
  response.add(new protobuf.Field("partialSuccess", 1, "ExportTracePartialSuccess"));
  return response;
}

/**
 * Loads and resolves the OTLP trace schema (a few ms; call once per app).
 * @returns the request and response message types
 * @throws {Error} when the `.proto` files are missing or do not parse
 */
export function loadOtlpTraceSchema(): OtlpTraceSchema {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_ROOT + target;
  root.loadSync(SERVICE_PROTO);
  const response = addPartialSuccess(root);
  root.resolveAll();
  return { request: root.lookupType(`${PACKAGE}.ExportTraceServiceRequest`), response };
}
