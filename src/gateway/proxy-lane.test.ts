/**
 * The proxy's direct path (`proxy-lane.ts`) answers exactly as the Fastify route does: two gateways, one with the
 * path and one without, get the same requests; statuses, bodies, headers, log lines, metrics and recorded events
 * must match, and the path must have taken the calls it is meant to take and left the rest to Fastify.
 */
import { connect } from "node:net";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mintAgentToken } from "../protocol/agent-token.js";
import { RolloutCreateSchema } from "../protocol/index.js";
import { ProxyLane } from "./proxy-lane.js";
import { FakeVllm } from "./testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "./testing/serve.js";

/** A gateway under comparison and its log lines. */
interface Side {
  gateway: TestGateway;
  lines: Record<string, unknown>[];
}

async function startSide(proxyLane: boolean, upstream: string): Promise<Side> {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level: "info" }, sink);
  const gateway = await startTestGateway({ model_name: "policy", body_limit_bytes: 4096 }, undefined, logger, {
    proxyLane,
  });
  await gateway.store.upsertModels([{ model: "policy", endpoint: upstream, version: 0 }]);
  const rollouts = ["r-lane", "r-lane-2", "r.lane_3:x"].map((rollout_id) =>
    RolloutCreateSchema.parse({ rollout_id, input: {} }),
  );
  await gateway.store.createRollouts(rollouts);
  return { gateway, lines };
}

/** What must be equal between the two answers: ids and times replaced. */
function normalised(text: string): string {
  return text
    .replace(/"(id|created|created_at|request_id|upstream_request_id)":("[^"]*"|\d+)/g, '"$1":"*"')
    .replace(/(chatcmpl|cmpl|resp|msg|msg_|item|rs|fc)[-_][A-Za-z0-9-]+/g, "$1-*");
}

const KEPT_HEADERS = ["content-type", "retry-after", "x-agl-paused", "x-request-id", "connection", "transfer-encoding"];

interface Answer {
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

async function send(
  side: Side,
  path: string,
  init: { body?: string; headers?: Record<string, string> },
): Promise<Answer> {
  const response = await fetch(side.gateway.url + path, {
    method: "POST",
    headers: { authorization: "Bearer test-key", "content-type": "application/json", ...init.headers },
    body: init.body,
  });
  const body = await response.text();
  const headers = Object.fromEntries(KEPT_HEADERS.map((name) => [name, response.headers.get(name)]));
  return { status: response.status, headers, body: normalised(body) };
}

/** The log lines of one request, without what differs between any two runs (time, port, duration). */
function linesOf(side: Side, requestId: string): unknown[] {
  return side.lines
    .filter((line) => line.reqId === requestId)
    .map((line) => {
      const { time: _t, pid: _p, hostname: _h, responseTime, req, err, ...rest } = line;
      expect(typeof (responseTime ?? 0)).toBe("number");
      const request: Record<string, unknown> | undefined =
        req === undefined ? undefined : { ...(req as object), remotePort: "*" };
      // The two gateways listen on different ports; an empty host (no Host header) must stay empty on both.
      if (request?.host) request.host = "*";
      const error = err === undefined ? undefined : { ...(err as { type: string; message: string }), stack: "*" };
      return { ...rest, req: request, err: error };
    });
}

const BASE = "/proxy/rollout/r-lane/attempt/0/mode/train";
const chat = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi ☃" }], ...extra });
const deep = `${"[".repeat(300)}${"]".repeat(300)}`;

/** Requests the direct path takes: [name, path, body, extra headers]. */
const TAKEN: [string, string, string, Record<string, string>?][] = [
  ["chat", `${BASE}/openai/v1/chat/completions`, chat()],
  ["chat stream", `${BASE}/openai/v1/chat/completions`, chat({ stream: true })],
  ["completions", `${BASE}/openai/v1/completions`, JSON.stringify({ model: "policy", prompt: "hi" })],
  ["responses", `${BASE}/openai/v1/responses`, JSON.stringify({ model: "policy", input: "hi" })],
  [
    "anthropic",
    `${BASE}/anthropic/v1/messages`,
    JSON.stringify({ model: "policy", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  ],
  ["agent segment", `${BASE}/agent/planner/openai/v1/chat/completions`, chat()],
  ["query string", `${BASE}/openai/v1/chat/completions?api-version=1`, chat()],
  ["charset", `${BASE}/openai/v1/chat/completions`, chat(), { "content-type": "application/json; charset=utf-8" }],
  ["id characters", "/proxy/rollout/r.lane_3:x/attempt/0/mode/val/openai/v1/chat/completions", chat()],
  ["unknown rollout", "/proxy/rollout/r-none/attempt/0/mode/train/openai/v1/chat/completions", chat()],
  ["finished attempt check", "/proxy/rollout/r-lane-2/attempt/7/mode/train/openai/v1/chat/completions", chat()],
  ["invalid JSON", `${BASE}/openai/v1/chat/completions`, "{"],
  ["array body", `${BASE}/openai/v1/chat/completions`, "[1]"],
  ["empty body", `${BASE}/openai/v1/chat/completions`, ""],
  ["deep JSON", `${BASE}/openai/v1/chat/completions`, deep],
  ["proto key", `${BASE}/openai/v1/chat/completions`, '{"__proto__":{"x":1},"model":"policy"}'],
  ["bad agent name", `${BASE}/openai/v1/chat/completions`, chat(), { "x-arclight-agent": "  " }],
];

/** Requests left to Fastify. */
const DECLINED: [string, string, string, Record<string, string>?][] = [
  ["wrong key", `${BASE}/openai/v1/chat/completions`, chat(), { authorization: "Bearer nope" }],
  ["no key", `${BASE}/openai/v1/chat/completions`, chat(), { authorization: "" }],
  ["text body", `${BASE}/openai/v1/chat/completions`, chat(), { "content-type": "text/plain" }],
  ["too large", `${BASE}/openai/v1/chat/completions`, chat({ pad: "x".repeat(5000) })],
  ["percent-encoded id", "/proxy/rollout/r%2Dlane/attempt/0/mode/train/openai/v1/chat/completions", chat()],
  ["trailing slash", `${BASE}/openai/v1/chat/completions/`, chat()],
  ["unknown mode", "/proxy/rollout/r-lane/attempt/0/mode/test/openai/v1/chat/completions", chat()],
  ["unknown endpoint", `${BASE}/openai/v1/embeddings`, chat()],
];

describe("the proxy's direct path answers as the Fastify route does", () => {
  let fake: FakeVllm;
  let lane: Side;
  let plain: Side;
  const taken: boolean[] = [];

  beforeAll(async () => {
    fake = await FakeVllm.start();
    lane = await startSide(true, fake.url);
    plain = await startSide(false, fake.url);
    const original = ProxyLane.prototype.serve;
    vi.spyOn(ProxyLane.prototype, "serve").mockImplementation(function (this: ProxyLane, req, res) {
      const took = original.call(this, req, res);
      taken.push(took);
      return took;
    });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await lane.gateway.close();
    await plain.gateway.close();
    await fake.close();
  });

  async function compare(name: string, path: string, body: string, headers: Record<string, string> = {}) {
    const requestId = `lane-${name.replaceAll(" ", "-")}`;
    const withId = { "x-request-id": requestId, ...headers };
    taken.length = 0;
    const a = await send(lane, path, { body, headers: withId });
    expect(taken, name).toHaveLength(1);
    const b = await send(plain, path, { body, headers: withId });
    expect(taken, `${name}: the gateway without the path never asks it`).toHaveLength(1);
    expect(a, name).toEqual(b);
    await vi.waitFor(() => expect(linesOf(lane, requestId).length).toBe(linesOf(plain, requestId).length));
    expect(linesOf(lane, requestId), name).toEqual(linesOf(plain, requestId));
    return { answer: a, took: taken[0] };
  }

  it.each(TAKEN)("takes %s and answers it the same", async (name, path, body, headers) => {
    const { answer, took } = await compare(name, path, body, headers);
    expect(took, name).toBe(true);
    expect(answer.headers["x-request-id"]).toBe(`lane-${name.replaceAll(" ", "-")}`);
  });

  it.each(DECLINED)("leaves %s to Fastify", async (name, path, body, headers) => {
    const { took } = await compare(name, path, body, headers);
    expect(took, name).toBe(false);
  });

  it("takes an agent token's own calls and leaves its other rollouts' calls to Fastify (403)", async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const token = mintAgentToken("test-key", { rollout_id: "r-lane", attempt_id: "0", mode: "train", exp });
    const own = await compare("token own", `${BASE}/openai/v1/chat/completions`, chat(), {
      authorization: `Bearer ${token}`,
    });
    expect([own.took, own.answer.status]).toEqual([true, 200]);
    const other = await compare(
      "token other",
      "/proxy/rollout/r-lane-2/attempt/0/mode/train/openai/v1/chat/completions",
      chat(),
      { authorization: `Bearer ${token}` },
    );
    expect([other.took, other.answer.status]).toEqual([false, 403]);
  });

  it("logs a body cut short as Fastify does, and goes on serving", async () => {
    for (const [side, expected] of [
      [lane, true],
      [plain, false],
    ] as const) {
      taken.length = 0;
      const { port } = new URL(side.gateway.url);
      const socket = connect(Number(port), "127.0.0.1");
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write(
        `POST ${BASE}/openai/v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer test-key\r\n` +
          'content-type: application/json\r\ncontent-length: 100\r\nx-request-id: lane-cut\r\n\r\n{"model":',
      );
      // The gateway has the headers and part of the body when the client goes away.
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.destroy();
      expect(taken).toEqual(expected ? [true] : []);
      await vi.waitFor(() => expect(linesOf(side, "lane-cut").length).toBeGreaterThan(0));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(linesOf(lane, "lane-cut")).toEqual(linesOf(plain, "lane-cut"));
    const after = await compare("after cut", `${BASE}/openai/v1/chat/completions`, chat());
    expect([after.took, after.answer.status]).toEqual([true, 200]);
  });

  it("reads a JSON body that starts with a byte order mark, on both paths", async () => {
    const { answer, took } = await compare("byte order mark", `${BASE}/openai/v1/chat/completions`, `\uFEFF${chat()}`);
    expect([took, answer.status]).toEqual([true, 200]);
  });

  it("logs an HTTP/1.0 call without a Host header as Fastify does", async () => {
    const body = chat();
    for (const side of [lane, plain]) {
      const socket = connect(Number(new URL(side.gateway.url).port), "127.0.0.1");
      socket.write(
        `POST ${BASE}/openai/v1/chat/completions HTTP/1.0\r\nauthorization: Bearer test-key\r\n` +
          `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: lane-no-host\r\n\r\n${body}`,
      );
      socket.resume();
      await new Promise((resolve) => socket.on("close", resolve));
      await vi.waitFor(() => expect(linesOf(side, "lane-no-host").length).toBeGreaterThan(0));
    }
    const [line] = linesOf(lane, "lane-no-host") as { req: { host: unknown } }[];
    expect(line!.req.host).toBe("");
    expect(linesOf(lane, "lane-no-host")).toEqual(linesOf(plain, "lane-no-host"));
  });

  it("answers 429 with the pause headers while paused", async () => {
    for (const side of [lane, plain]) {
      const paused = await side.gateway.call("POST", "/proxy/pause", { retry_after_seconds: 3, reason: "update" });
      expect(paused.status).toBe(200);
    }
    const { answer, took } = await compare("paused", `${BASE}/openai/v1/chat/completions`, chat());
    expect([took, answer.status, answer.headers["retry-after"], answer.headers["x-agl-paused"]]).toEqual([
      true,
      429,
      "3",
      "true",
    ]);
    for (const side of [lane, plain]) expect((await side.gateway.call("POST", "/proxy/resume", {})).status).toBe(200);
  });

  it("records the same events and counts the same answers in /metrics", async () => {
    const strip = (events: { data: unknown; event_type: string }[]) =>
      events.map((event) => ({ type: event.event_type, data: normalised(JSON.stringify(event.data)) }));
    const eventsOf = async (side: Side) => strip(await side.gateway.store.listEvents("r-lane"));
    const recorded = await eventsOf(lane);
    expect(recorded.length).toBeGreaterThan(5);
    expect(recorded.map((event) => event.data.replace(/"latency_ms":[\d.e+-]+/g, ""))).toEqual(
      (await eventsOf(plain)).map((event) => event.data.replace(/"latency_ms":[\d.e+-]+/g, "")),
    );
    const counts = async (side: Side) => {
      const text = await (await side.gateway.call("GET", "/metrics")).text();
      return text
        .split("\n")
        .filter((line) => /^arclight_http_(requests_total|request_duration_seconds_count)\{.*proxy\/rollout/.test(line))
        .sort();
    };
    const laneCounts = await counts(lane);
    expect(laneCounts.length).toBeGreaterThan(4);
    expect(laneCounts).toEqual(await counts(plain));
  });
});
