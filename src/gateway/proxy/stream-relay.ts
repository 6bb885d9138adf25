/**
 * @module Relays a 2xx SSE answer to the agent while assembling it for the record, durable before acknowledged:
 * every event is passed on as the next one arrives, but the LAST event and `[DONE]` (or a translated stream's closing
 * events) are held back until the call's `model_request` event is committed. If the commit fails, the agent gets an
 * error event instead (vLLM's `{error}` shape, or the translated API's), never `[DONE]`: a stream that completed for
 * the agent is always a stream that is recorded.
 */
import { once } from "node:events";
import { performance } from "node:perf_hooks";
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import type { ArclightError } from "../../protocol/index.js";
import { SSE_DONE, SseParser, sseEvent } from "../../wire/sse.js";
import { proxyAbortError } from "./call-lifetime.js";
import {
  type CallBase,
  type ProxyCall,
  type ProxyContext,
  type ProxyEndpointKind,
  parseJson,
  type TrackedCall,
} from "./call-request.js";
import { type CaptureReason, recordCall } from "./record-call.js";
import { StreamAssembler } from "./stream-assembler.js";
import type { UpstreamAnswer } from "./upstream.js";

type Failure = { message: string; code: number };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** vLLM's mid-stream error event shape (`ErrorResponse`); `withDone` appends `[DONE]` as vLLM does. */
function streamErrorEvent(message: string, code: number, withDone: boolean): string {
  const type = code === 504 ? "GatewayTimeout" : code === 503 ? "ServiceUnavailable" : "BadGateway";
  const error = { error: { message, type, param: null, code } };
  return sseEvent(JSON.stringify(error)) + (withDone ? sseEvent(SSE_DONE) : "");
}

/** Starts the SSE answer to the agent with the upstream's status; the returned stream is its body. */
function openAgentStream(call: ProxyCall, status: number, reply: FastifyReply): PassThrough {
  const out = new PassThrough();
  // A write after the agent hung up fails here; the upstream side is aborted by the reply's "close" and recorded.
  out.on("error", (err) => call.log.debug({ err }, "agent stream closed"));
  void reply
    .status(status)
    .header("content-type", call.translation?.streamContentType ?? "text/event-stream; charset=utf-8")
    .header("cache-control", "no-cache")
    .header("x-accel-buffering", "no")
    .send(out);
  return out;
}

/**
 * Turns upstream events into the agent's SSE text, holding the newest event back. Malformed events (not JSON, or
 * JSON that is not an object) are passed on as they came and counted: the capture is then incomplete.
 */
class EventRelay {
  readonly assembler: StreamAssembler;
  sawDone = false;
  malformed = 0;
  upstreamErrorSeen = false;
  private held: string | null = null;

  constructor(
    kind: ProxyEndpointKind,
    private readonly translation: ProxyCall["translation"],
  ) {
    this.assembler = new StreamAssembler(kind);
  }

  /** Takes newly complete events; returns the SSE text now releasable (all but the newest event). */
  push(events: string[]): string {
    let text = "";
    for (const data of events) {
      if (data === SSE_DONE) {
        this.sawDone = true;
        continue;
      }
      const parsed = parseJson(data);
      if (isObject(parsed)) this.assembler.add(parsed);
      else this.malformed++;
      if (this.held !== null) text += this.render(this.held);
      this.held = data;
    }
    return text;
  }

  /** The held-back event's text (after the commit). */
  release(): string {
    const held = this.held;
    this.held = null;
    return held === null ? "" : this.render(held);
  }

  private render(data: string): string {
    if (!this.translation) return sseEvent(data);
    const parsed = parseJson(data);
    if (!isObject(parsed) || this.upstreamErrorSeen) return "";
    const error = (parsed as { error?: { message?: unknown; code?: unknown } }).error;
    this.upstreamErrorSeen = error !== undefined;
    return error
      ? this.translation.streamError(String(error.message ?? "upstream error"), Number(error.code) || 502)
      : this.translation.chunk(parsed);
  }
}

/** Relays and records one 2xx SSE answer (`answer.stream` set); resolves once the agent's stream has ended. */
export async function relayStream(
  ctx: ProxyContext,
  call: TrackedCall,
  answer: UpstreamAnswer,
  reply: FastifyReply,
  base: CallBase,
): Promise<void> {
  const out = openAgentStream(call, answer.statusCode, reply);
  const relay = new EventRelay(call.kind, call.translation);
  const failure = await pump(ctx, call, answer, relay, out);
  const assembled = relay.assembler.finish();
  const reasons: CaptureReason[] = relay.malformed > 0 ? ["stream_chunk_malformed"] : [];
  const malformedError =
    relay.malformed > 0 ? { message: `upstream sent ${relay.malformed} malformed SSE events` } : null;
  try {
    await recordCall(
      ctx.store,
      call,
      {
        kind: base.kind,
        model: base.model,
        request: base.request,
        endpoint: answer.endpoint,
        response: assembled.response,
        error: failure ? { message: failure.message } : (assembled.error ?? malformedError),
        latencyMs: performance.now() - base.startedAt,
        httpStatus: failure?.code ?? streamStatus(assembled.error, answer.statusCode),
        retryCount: answer.retryCount,
        captureIncomplete: assembled.captureIncomplete || reasons.length > 0,
        captureReasons: reasons,
      },
      base,
    );
  } catch (err) {
    // Not recorded: the held-back event and [DONE] are withheld; the agent gets an error event to retry on.
    const error = err as ArclightError;
    if (!out.destroyed) out.end(errorTail(call.translation, error.message, error.status ?? 503));
    return;
  }
  if (!out.destroyed) out.write(relay.release() + streamTail(call.translation, relay, failure, assembled.response));
  out.end();
}

/** Reads the upstream stream into the relay; returns why it failed, or null when it ended with `[DONE]`. */
async function pump(
  ctx: ProxyContext,
  call: TrackedCall,
  answer: UpstreamAnswer,
  relay: EventRelay,
  out: PassThrough,
): Promise<Failure | null> {
  const parser = new SseParser();
  const limitBytes = ctx.options.maxResponseBytes;
  let sizeBytes = 0;
  try {
    for await (const chunk of answer.stream!) {
      sizeBytes += (chunk as Buffer).length;
      if (sizeBytes > limitBytes) {
        answer.stream!.destroy();
        return { message: `upstream stream larger than ${limitBytes} bytes (maxResponseBytes)`, code: 502 };
      }
      const text = relay.push(parser.feed(chunk as Buffer));
      if (text !== "" && !out.write(text) && !out.destroyed) await once(out, "drain");
    }
    const text = relay.push(parser.end());
    if (text !== "") out.write(text);
    return relay.sawDone ? null : { message: "upstream closed the stream before [DONE]", code: 502 };
  } catch (err) {
    const aborted = proxyAbortError(call.signal);
    if (aborted) {
      call.log.warn({ rolloutId: call.rolloutId, reason: aborted.message }, "proxy aborted a streaming call");
      return { message: aborted.message, code: aborted.status };
    }
    const timedOut = (err as { code?: string }).code === "UND_ERR_BODY_TIMEOUT";
    const what = timedOut ? `sent nothing for ${ctx.options.upstreamTimeoutMs} ms` : "broke";
    call.log.warn({ err, rolloutId: call.rolloutId }, "upstream stream failed");
    return { message: `upstream stream ${what}: ${(err as Error).message}`, code: timedOut ? 504 : 502 };
  }
}

/** The recorded status of a stream that ended: the upstream error event's code (502 without one), else `status`. */
function streamStatus(upstreamError: unknown, status: number): number {
  if (!upstreamError) return status;
  const code = (upstreamError as { error?: { code?: unknown } }).error?.code;
  return typeof code === "number" ? code : 502;
}

/** The error event that replaces the stream's end when its event could not be recorded (no `[DONE]`). */
function errorTail(translation: ProxyCall["translation"], message: string, status: number): string {
  return translation ? translation.streamError(message, status) : streamErrorEvent(message, status, false);
}

/**
 * What the agent gets after the relayed events: `[DONE]` (when the upstream sent it), a translated stream's error or
 * closing events, or vLLM's error event when the untranslated stream failed.
 */
function streamTail(
  translation: ProxyCall["translation"],
  relay: EventRelay,
  failure: Failure | null,
  response: Parameters<NonNullable<ProxyCall["translation"]>["end"]>[0],
): string {
  if (translation) {
    if (relay.upstreamErrorSeen) return "";
    return failure ? translation.streamError(failure.message, failure.code) : translation.end(response);
  }
  if (failure) return streamErrorEvent(failure.message, failure.code, true);
  return relay.sawDone ? sseEvent(SSE_DONE) : "";
}
