/**
 * @module How the proxy answers an agent: the {@link AgentReply} it writes on (Fastify's reply on the Fastify route
 * satisfies it), and {@link RawReply}, the same on a bare Node response for the gateway's direct path
 * (`proxy-lane.ts`). RawReply writes what Fastify's reply would for the same calls: the same status, headers and body
 * bytes (content-type defaults and the added `charset=utf-8` of a JSON type, `content-length` for a whole body, a
 * stream piped as it comes), so an agent cannot tell the two paths apart.
 */
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { pipeline, type Readable } from "node:stream";

/**
 * The answer to the agent, as the proxy writes it: Fastify's reply on the Fastify route, {@link RawReply} on the
 * gateway's direct path (`gateway/proxy-lane.ts`). Headers set before `send` go out with it.
 */
export interface AgentReply {
  /** Sets the status code. */
  status(code: number): AgentReply;
  /** Sets one header (names case-insensitive). */
  header(name: string, value: string): AgentReply;
  /**
   * Sends the answer: a Buffer or string as it is (with `content-length`), a stream piped as it comes, any other
   * value (`null` included) as JSON (`application/json; charset=utf-8` unless a content-type was set).
   */
  send(payload: Buffer | string | Readable | object | null): AgentReply;
  /** The Node response; its `close` event means the agent left or the answer was sent. */
  readonly raw: ServerResponse;
}

/** Content-types given to a body sent without one (Fastify's). */
const OCTET = "application/octet-stream";
const PLAIN = "text/plain; charset=utf-8";
const JSON_UTF8 = "application/json; charset=utf-8";

function isStream(payload: unknown): payload is Readable {
  return typeof payload === "object" && payload !== null && typeof (payload as Readable).pipe === "function";
}

/** A JSON media type without a charset gets `; charset=utf-8`, as Fastify adds it. */
function withCharset(type: string): string {
  return type.includes("json") && !/;\s*charset=/i.test(type) ? `${type}; charset=utf-8` : type;
}

/** An {@link AgentReply} writing straight to a Node `ServerResponse`; one `send` per reply. */
export class RawReply implements AgentReply {
  private code = 200;
  private readonly headers: OutgoingHttpHeaders = {};
  /** True once `send` was called. */
  sent = false;

  /**
   * @param raw - the response to write
   * @param closing - true once the server is closing: the answer then carries `connection: close` (as the gateway's
   *   Fastify answers do), so a keep-alive client does not hold the server open
   * @param onStreamError - called when a piped body fails after its headers went out (the socket is then destroyed)
   */
  constructor(
    readonly raw: ServerResponse,
    private readonly closing: () => boolean = () => false,
    private readonly onStreamError: (err: Error) => void = () => undefined,
  ) {}

  status(code: number): this {
    this.code = code;
    return this;
  }

  header(name: string, value: string): this {
    this.headers[name.toLowerCase()] = value;
    return this;
  }

  /**
   * Writes the answer. A Buffer keeps its content-type (`application/octet-stream` when none is set), a string gets
   * `text/plain; charset=utf-8` when none is set, any other value (`null` included) is serialised as JSON; a JSON
   * content-type without a charset gets `; charset=utf-8`. A stream's headers go out at once and its body as it comes.
   * @throws {Error} when the answer was already sent (a bug in the caller: Fastify would log it and drop the payload)
   */
  send(payload: Buffer | string | Readable | object | null): this {
    if (this.sent) throw new Error("RawReply: the answer was already sent");
    this.sent = true;
    const res = this.raw;
    const headers = this.headers;
    if (this.closing()) headers.connection = "close";
    if (isStream(payload)) {
      res.writeHead(this.code, headers);
      pipeline(payload, res, (err) => {
        if (err && res.writableFinished === false && err.code !== "ERR_STREAM_PREMATURE_CLOSE") this.onStreamError(err);
      });
      return this;
    }
    const type = headers["content-type"] as string | undefined;
    let body: Buffer | string;
    if (Buffer.isBuffer(payload)) {
      body = payload;
      if (type === undefined) headers["content-type"] = OCTET;
    } else if (typeof payload === "string") {
      body = payload;
      headers["content-type"] = type === undefined ? PLAIN : withCharset(type);
    } else {
      body = JSON.stringify(payload);
      headers["content-type"] = type === undefined ? JSON_UTF8 : withCharset(type);
    }
    headers["content-length"] = typeof body === "string" ? Buffer.byteLength(body) : body.length;
    res.writeHead(this.code, headers);
    res.end(body);
    return this;
  }
}
