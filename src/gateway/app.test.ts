import { once } from "node:events";
import { connect } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../store/memory.js";
import { SqliteStore } from "../store/sqlite.js";
import { tempDir } from "../testing/temp-dir.js";
import { buildApp, rolloutIdFromUrl } from "./app.js";
import { gatewayConfig } from "./config.js";
import { MAX_JSON_DEPTH } from "./json-depth.js";
import { startTestGateway, type TestGateway } from "./testing/serve.js";

const gateways: TestGateway[] = [];
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
});

async function start(...args: Parameters<typeof startTestGateway>): Promise<TestGateway> {
  const gw = await startTestGateway(...args);
  gateways.push(gw);
  return gw;
}

/** Every route the gateway serves (except /healthz), with a body that would be valid. */
const PROTECTED_ROUTES: [string, string, unknown?][] = [
  ["POST", "/api/rollouts", [{ input: 1 }]],
  ["GET", "/api/rollouts"],
  ["GET", "/api/rollouts/terminal"],
  ["GET", "/api/rollouts/r"],
  ["PATCH", "/api/rollouts/r", { status: { state: "running" } }],
  ["DELETE", "/api/rollouts/r"],
  ["POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: {} }],
  ["GET", "/api/rollouts/r/events"],
  ["POST", "/api/models", [{ model: "m", endpoint: "http://h/v1" }]],
  ["GET", "/api/models"],
  ["DELETE", "/api/models"],
  ["GET", "/metrics"],
  ["GET", "/no/such/route"],
];

function send(gw: TestGateway, method: string, path: string, body: unknown, headers: Record<string, string>) {
  return fetch(gw.url + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

describe("auth", () => {
  it.each(PROTECTED_ROUTES)(
    "%s %s answers 401 {detail} without a key or with a wrong one",
    async (method, path, body) => {
      const gw = await start({ key: "s3cret" });
      const wrong: Record<string, string>[] = [
        {},
        { authorization: "Bearer wrong" },
        { "x-api-key": "s3cre" },
        { authorization: "s3cret" },
      ];
      for (const headers of wrong) {
        const res = await send(gw, method, path, body, headers);
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ detail: "Missing or invalid API key", code: "unauthorized" });
      }
      expect(await gw.store.listRollouts()).toEqual([]);
      expect(await gw.store.listModels()).toEqual([]);
    },
  );

  it.each(PROTECTED_ROUTES)("%s %s passes auth with Bearer or x-api-key", async (method, path, body) => {
    const gw = await start({ key: "s3cret" });
    await gw.store.createRollouts([
      {
        rollout_id: "r",
        input: 1,
        is_train: true,
        config: { timeout_seconds: 1, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null },
      },
    ]);
    const good: Record<string, string>[] = [{ authorization: "Bearer s3cret" }, { "x-api-key": "s3cret" }];
    for (const headers of good) {
      const res = await send(gw, method, path, body, headers);
      expect(res.status).not.toBe(401);
    }
  });

  it("leaves /healthz open when a key is set", async () => {
    const gw = await start({ key: "s3cret" });
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${gw.url}/healthz?x=1`)).status).toBe(200);
  });

  it("an empty key disables auth", async () => {
    const gw = await start({ key: "" });
    expect((await fetch(`${gw.url}/api/rollouts`)).status).toBe(200);
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(200);
  });
});

describe("errors are JSON {detail}", () => {
  it("answers 400 for invalid JSON and stores nothing", async () => {
    const gw = await start();
    const res = await fetch(`${gw.url}/api/rollouts`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json" },
      body: '[{"input": 1',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { detail: string; code: string };
    expect(body.code).toBe("bad_request");
    expect(body.detail).toMatch(/^Invalid JSON body/);
    expect(await gw.store.listRollouts()).toEqual([]);
  });

  // Before: valid JSON with a `__proto__` key was refused 400 "Invalid JSON body".
  it("accepts valid JSON with a __proto__ key, dropping that key: no prototype is touched", async () => {
    const gw = await start();
    const res = await fetch(`${gw.url}/api/rollouts`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json" },
      body: '[{"rollout_id": "p", "input": {"q": 1, "__proto__": {"admin": true}, "constructor": {"prototype": {"x": 1}}}}]',
    });
    expect(res.status).toBe(201);
    const input = (await gw.store.getRollout("p"))!.input as Record<string, unknown>;
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
    expect(Object.keys(input)).toEqual(["q", "constructor"]);
    expect((input as { admin?: unknown }).admin).toBeUndefined();
    expect(({} as { admin?: unknown; x?: unknown }).admin).toBeUndefined();
    expect(({} as { x?: unknown }).x).toBeUndefined();
  });

  it("answers 400 for a body nested deeper than the limit and stores nothing, on SQLite too", async () => {
    const dir = tempDir("arclight-depth-");
    const gw = await start({}, SqliteStore.open(join(dir, "gw.db")));
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: 1 }]);
    const deep = `{"event_type":"log","data":{"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`;
    const res = await fetch(`${gw.url}/api/rollouts/r/attempt/0/events`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json" },
      body: deep,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      detail: `JSON body nested deeper than ${MAX_JSON_DEPTH} levels`,
      code: "bad_request",
    });
    expect(await gw.store.countEvents()).toBe(0);
    // Exactly at the limit is fine: the body's object is level 1, `data` level 2, the arrays the rest.
    const levels = MAX_JSON_DEPTH - 2;
    const atLimit = { event_type: "log", data: { x: JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`) } };
    expect((await gw.call("POST", "/api/rollouts/r/attempt/0/events", atLimit)).status).toBe(200);
  });

  it("answers 413 for a body over the limit and stores nothing", async () => {
    const gw = await start({ body_limit_bytes: 1024 });
    const res = await gw.call("POST", "/api/rollouts", [{ input: "x".repeat(2000) }]);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      detail: "Request body is too large: the limit is 1024 bytes",
      code: "fst_err_ctp_body_too_large",
    });
    expect(await gw.store.listRollouts()).toEqual([]);
    expect((await gw.call("POST", "/api/rollouts", [{ input: "x".repeat(500) }])).status).toBe(201);
  });

  it("answers 415 {detail, code} for a form-encoded body, on API and proxy routes (as docs/api.md says)", async () => {
    const gw = await start();
    for (const path of ["/api/rollouts", "/proxy/rollout/r/attempt/0/mode/train/openai/v1/chat/completions"]) {
      const res = await fetch(gw.url + path, {
        method: "POST",
        headers: { authorization: "Bearer test-key", "content-type": "application/x-www-form-urlencoded" },
        body: "input=1",
      });
      expect(res.status, path).toBe(415);
      const detail = 'Unsupported Media Type: content-type "application/x-www-form-urlencoded"; send application/json';
      const code = "fst_err_ctp_invalid_media_type";
      // The proxy's answers also carry OpenAI's error object, the only part OpenAI clients read.
      const openai = { error: { message: detail, type: "invalid_request_error", param: null, code } };
      expect(await res.json()).toEqual(path.startsWith("/proxy/") ? { detail, code, ...openai } : { detail, code });
    }
    // OTLP reads protobuf too, and says so; a content-type thousands of characters long is quoted by its start.
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": `text/${"x".repeat(3000)}` },
      body: "x",
    });
    expect(res.status).toBe(415);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toBe(
      `Unsupported Media Type: content-type "text/${"x".repeat(95)}… (3005 characters)"; send application/json or application/x-protobuf`,
    );
  });

  it("answers 422 for an empty JSON body on rollout create, as for a missing body, not 400 (as docs/api.md says)", async () => {
    const gw = await start();
    for (const body of ["", "  "]) {
      const res = await fetch(`${gw.url}/api/rollouts`, {
        method: "POST",
        headers: { authorization: "Bearer test-key", "content-type": "application/json" },
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      const { detail, code } = (await res.json()) as { detail: { loc: string[] }[]; code: string };
      expect(code).toBe("validation_failed");
      expect(detail[0]?.loc).toEqual(["body"]);
    }
    expect(await gw.store.listRollouts()).toEqual([]);
  });

  it("answers 404 {detail} for an unknown route or method", async () => {
    const gw = await start();
    const res = await gw.call("GET", "/api/nothing?x=1");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Route GET /api/nothing not found", code: "not_found" });
    expect((await gw.call("PUT", "/api/rollouts")).status).toBe(404);
    // Without the key an unknown path is 401, as a known one is: the answer does not tell which paths exist.
    expect((await fetch(`${gw.url}/api/nothing`)).status).toBe(401);
  });

  it("answers 404 for an unknown path with an over-long segment quoting the path's start only, not the whole URL", async () => {
    const gw = await start();
    const path = `/no/such/${"y".repeat(15_000)}`;
    const res = await gw.call("GET", `${path}?x=1`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { detail: string; code: string };
    expect(body.code).toBe("not_found");
    expect(body.detail).toBe(`Route GET ${path.slice(0, 200)}… (15009 characters) not found`);
  });

  it('answers 404 {detail} for a path with an empty id, not a lookup of the id ""', async () => {
    const gw = await start();
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: 1 }]);
    for (const [method, path] of [
      ["GET", "/api/rollouts/"],
      ["DELETE", "/api/rollouts/"],
      ["GET", "/api/rollouts//events"],
      ["POST", "/api/rollouts/r/attempt//events"],
      ["POST", "/proxy/rollout//attempt/0/mode/train/openai/v1/chat/completions"],
    ] as const) {
      const res = await gw.call(method, path, method === "POST" ? { event_type: "log", data: {} } : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
      const { detail } = (await res.json()) as { detail: string };
      expect(detail).toMatch(new RegExp(`^Route ${method} \\S+ not found \\(empty :`));
    }
    // A caller with no key still gets 401 first; the list and the rollout itself still answer.
    expect((await fetch(`${gw.url}/api/rollouts/`)).status).toBe(401);
    expect((await gw.call("GET", "/api/rollouts")).status).toBe(200);
    expect((await gw.call("GET", "/api/rollouts/r")).status).toBe(200);
  });

  it("reaches a rollout with a 200-character id on every path, and answers a malformed URL with {detail} and a request id", async () => {
    const gw = await start();
    const id = `r${"x".repeat(199)}`;
    expect((await gw.call("POST", "/api/rollouts", [{ rollout_id: id, input: 1 }])).status).toBe(201);
    expect((await gw.call("GET", `/api/rollouts/${id}`)).status).toBe(200);
    const event = await gw.call("POST", `/api/rollouts/${id}/attempt/0/events`, { event_type: "log", data: {} });
    expect(event.status).toBe(200);
    expect((await gw.call("GET", `/api/rollouts/${id}/events`)).status).toBe(200);
    const tooLong = await gw.call("GET", `/api/rollouts/${"y".repeat(1001)}`);
    expect(tooLong.status).toBe(414);
    expect(tooLong.headers.get("x-request-id")).toBeTruthy();
    const tooLongBody = (await tooLong.json()) as { detail: string; code: string };
    expect(tooLongBody.code).toBe("fst_err_max_param_length");
    // The detail quotes the path's start only, says how long the path was, and keeps Fastify's reason.
    expect(tooLongBody.detail.length).toBeLessThanOrEqual(300);
    expect(tooLongBody.detail).toMatch(
      /^'\/api\/rollouts\/y+…' \(1015 characters\) is exceeding the max param length$/,
    );
    const malformed = await gw.call("GET", "/api/rollouts/%zz/events");
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get("x-request-id")).toBeTruthy();
    const body = (await malformed.json()) as { detail: string; code: string };
    expect(body.code).toBe("fst_err_bad_url");
    expect(body.detail).toContain("not a valid url component");
  });

  it("answers 500 {detail} without internals when the store fails", async () => {
    const store = new MemoryStore();
    const gw = await start({}, store);
    await store.close();
    const res = await gw.call("GET", "/api/rollouts");
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ detail: "Internal Server Error", code: "internal_error" });
  });
});

describe("requests Node's HTTP parser refuses", () => {
  /** Writes `request` on a fresh connection; @returns everything the server sent before closing it */
  async function raw(gw: TestGateway, request: string): Promise<string> {
    const { port } = new URL(gw.url);
    const socket = connect(Number(port), "127.0.0.1");
    await once(socket, "connect");
    socket.write(request);
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));

  it("answers headers over 16 KiB (431) and a malformed request (400) with {detail, code}, and logs them", async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    const gw = await start({}, undefined, pino({ level: "info" }, stream));
    const big = await raw(gw, `GET /api/rollouts HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(big).toContain("Content-Type: application/json");
    expect(bodyOf(big)).toEqual({
      detail: "Request headers too large: Node's limit is 16 KiB for the request line and headers together",
      code: "header_overflow",
    });
    const bad = await raw(gw, "POST /api/rollouts HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    expect(bad).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(bodyOf(bad)).toEqual({
      detail: "Malformed HTTP request (HPE_INVALID_CONTENT_LENGTH)",
      code: "malformed_request",
    });
    const logged = lines.filter((l) => l.msg === "client error");
    expect(logged.map((l) => [l.status, l.code])).toEqual([
      [431, "header_overflow"],
      [400, "malformed_request"],
    ]);
    // The gateway still serves.
    expect((await gw.call("GET", "/api/rollouts")).status).toBe(200);
  });
});

describe("request ids and logs", () => {
  function captureLogs(): { lines: Record<string, unknown>[]; raw: string[]; logger: pino.Logger } {
    const lines: Record<string, unknown>[] = [];
    const raw: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        raw.push(String(chunk));
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    return { lines, raw, logger: pino({ level: "debug" }, stream) };
  }

  it("echoes a caller's x-request-id or makes one", async () => {
    const gw = await start();
    const given = await gw.call("GET", "/api/rollouts", undefined, { "x-request-id": "trace-123" });
    expect(given.headers.get("x-request-id")).toBe("trace-123");
    const made = await gw.call("GET", "/api/rollouts");
    expect(made.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("binds reqId to every request log and rolloutId on rollout routes; the key never reaches the logs", async () => {
    const { lines, raw, logger } = captureLogs();
    const gw = await start({ key: "very-secret-key" }, undefined, logger);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r7", input: 1 }], { "x-request-id": "req-a" });
    await gw.call("PATCH", "/api/rollouts/r7", { status: { state: "running" } }, { "x-request-id": "req-b" });
    await fetch(`${gw.url}/api/rollouts`, { headers: { "x-api-key": "wrong-key-value" } });
    const patched = lines.find((l) => l.msg === "patched rollout");
    expect(patched).toMatchObject({ reqId: "req-b", rolloutId: "r7", component: "gateway", state: "running" });
    expect(lines.find((l) => l.msg === "created rollouts")).toMatchObject({ reqId: "req-a", count: 1 });
    expect(lines.some((l) => l.msg === "request rejected" && l.status === 401)).toBe(true);
    const all = raw.join("");
    expect(all).not.toContain("very-secret-key");
    expect(all).not.toContain("wrong-key-value");
  });

  it("writes a request completed line, with status and time, for a URL refused before routing (400 bad URL, 414 long segment)", async () => {
    const { lines, logger } = captureLogs();
    const gw = await start({}, undefined, logger);
    await gw.call("GET", "/api/rollouts/%zz", undefined, { "x-request-id": "bad-url" });
    await gw.call("GET", `/api/rollouts/${"y".repeat(1001)}`, undefined, { "x-request-id": "too-long" });
    // Fastify refuses these before routing: the line is written when the answer is sent, which the client may see first.
    const completed = (reqId: string) => lines.find((l) => l.msg === "request completed" && l.reqId === reqId);
    await vi.waitFor(() => expect(completed("too-long")).toBeDefined());
    await vi.waitFor(() => expect(completed("bad-url")).toBeDefined());
    expect(completed("bad-url")).toMatchObject({
      res: { statusCode: 400 },
      req: { method: "GET", url: "/api/rollouts/%zz" },
    });
    expect(completed("too-long")).toMatchObject({ res: { statusCode: 414 } });
    expect(completed("too-long")?.responseTime).toBeGreaterThan(0);
  });

  it("logs a URL over 1,000 characters by its start and length", async () => {
    const { lines, logger } = captureLogs();
    const gw = await start({}, undefined, logger);
    const path = `/no/such/${"z".repeat(12_000)}`;
    await gw.call("GET", `${path}?q=1`, undefined, { "x-request-id": "long-url" });
    const line = await vi.waitFor(() => {
      const found = lines.find((l) => l.msg === "request completed" && l.reqId === "long-url");
      if (!found) throw new Error("no line yet");
      return found;
    });
    expect(line.req).toMatchObject({ method: "GET", url: `${path.slice(0, 1000)}… (${path.length + 4} characters)` });
    expect(JSON.stringify(line).length).toBeLessThan(3000);
  });
});

describe("GET /metrics", () => {
  it("exposes requests by route and status, latency, rollouts by state and stored events", async () => {
    const gw = await start();
    await gw.call("POST", "/api/rollouts", [
      { rollout_id: "a", input: 1 },
      { rollout_id: "b", input: 2 },
    ]);
    await gw.call("PATCH", "/api/rollouts/a", { status: { state: "running" } });
    await gw.call("POST", "/api/rollouts/a/attempt/0/events", [
      { event_type: "log", data: {} },
      { event_type: "log", data: {} },
    ]);
    await gw.call("GET", "/api/rollouts/zzz");
    await gw.call("GET", "/random/path/1");
    const res = await gw.call("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('arclight_http_requests_total{method="POST",route="/api/rollouts",status="201"} 1');
    expect(text).toContain('arclight_http_requests_total{method="GET",route="/api/rollouts/:id",status="404"} 1');
    expect(text).toContain('arclight_http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toMatch(
      /arclight_http_request_duration_seconds_count\{method="PATCH",route="\/api\/rollouts\/:id"\} 1/,
    );
    expect(text).toContain('arclight_rollouts{state="queuing"} 1');
    expect(text).toContain('arclight_rollouts{state="running"} 1');
    expect(text).toContain('arclight_rollouts{state="succeeded"} 0');
    expect(text).toContain("arclight_events_stored 2");
  });

  it("counts answers to URLs refused before routing (400 bad URL, 414 long segment) under route unmatched", async () => {
    const gw = await start();
    await gw.call("GET", "/api/rollouts/%zz");
    await gw.call("GET", `/api/rollouts/${"y".repeat(1001)}`);
    // Counted when the answer is sent, which the client may see first.
    await vi.waitFor(async () => {
      const text = await (await gw.call("GET", "/metrics")).text();
      expect(text).toContain('arclight_http_requests_total{method="GET",route="unmatched",status="400"} 1');
      expect(text).toContain('arclight_http_requests_total{method="GET",route="unmatched",status="414"} 1');
      expect(text).toContain('arclight_http_request_duration_seconds_count{method="GET",route="unmatched"} 2');
    });
  });

  it("keeps two apps in one process apart (per-app registry)", async () => {
    const one = await start();
    const two = await start();
    await one.call("GET", "/api/rollouts");
    await one.call("GET", "/api/rollouts");
    await two.call("GET", "/api/rollouts");
    const count = async (gw: TestGateway) =>
      /arclight_http_requests_total\{method="GET",route="\/api\/rollouts",status="200"\} (\d+)/.exec(
        await (await gw.call("GET", "/metrics")).text(),
      )?.[1];
    expect(await count(one)).toBe("2");
    expect(await count(two)).toBe("1");
  });
});

describe("buildApp", () => {
  it("builds an app that is not listening and answers through inject", async () => {
    const app = buildApp({ store: new MemoryStore(), config: gatewayConfig({ key: "" }) });
    expect(app.server.listening).toBe(false);
    const res = await app.inject({ method: "GET", url: "/healthz" });
    expect(res.json()).toEqual({ status: "ok" });
    await app.close();
  });
});

describe("rolloutIdFromUrl", () => {
  it("reads the rollout id of rollout, event and proxy paths, decoded", () => {
    expect(rolloutIdFromUrl("/api/rollouts/r1")).toBe("r1");
    expect(rolloutIdFromUrl("/api/rollouts/r1/attempt/0/events")).toBe("r1");
    expect(rolloutIdFromUrl("/api/rollouts/r%3A1/events?format=triplet")).toBe("r:1");
    expect(rolloutIdFromUrl("/proxy/rollout/r2/attempt/0/mode/train/openai/v1/chat/completions")).toBe("r2");
  });

  it("finds none on routes without a rollout", () => {
    expect(rolloutIdFromUrl("/api/rollouts")).toBeUndefined();
    expect(rolloutIdFromUrl("/api/rollouts?state_in=running")).toBeUndefined();
    expect(rolloutIdFromUrl("/api/rollouts/terminal?after=0")).toBeUndefined();
    expect(rolloutIdFromUrl("/healthz")).toBeUndefined();
  });
});
