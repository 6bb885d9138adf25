/**
 * Scenario: agents hold per-attempt tokens, not the admin key. A real gateway on loopback
 * over a real SQLite file (and PostgreSQL when its binaries are installed), a fake vLLM upstream, tokens minted the way
 * the controller mints them. Each test is one probe a hostile agent could make with a shared key.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { agentKeyFor } from "../src/controller/agent-credentials.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { mintAgentToken } from "../src/protocol/agent-token.js";
import type { Rollout } from "../src/protocol/index.js";
import { openStore } from "../src/store/open.js";
import { PostgresServer, skipWithoutPostgres } from "../src/testing/postgres-server.js";

const KEY = "admin-key";

/** Every route an agent token must not call, with a body where the route takes one. */
const ADMIN_ROUTES: [string, string, unknown?][] = [
  ["POST", "/api/rollouts", [{ rollout_id: "evil", input: {}, config: { local: { command: ["sh", "-c", "id"] } } }]],
  ["GET", "/api/rollouts"],
  ["GET", "/api/rollouts/terminal"],
  ["DELETE", "/api/rollouts/mine"],
  ["POST", "/api/models", [{ model: "policy", endpoint: "http://127.0.0.1:1/v1" }]],
  ["GET", "/api/models"],
  ["DELETE", "/api/models"],
  ["POST", "/proxy/pause", { retry_after_seconds: 86_400 }],
  ["POST", "/proxy/resume", {}],
  ["GET", "/proxy/state"],
  ["GET", "/metrics"],
  ["GET", "/api/runs"],
  ["PUT", "/api/runs/evil", {}],
  ["GET", "/api/dashboard/rollouts"],
  // Another rollout's data, read and written through the rollout routes.
  ["GET", "/api/rollouts/other"],
  ["GET", "/api/rollouts/other/events"],
  ["PATCH", "/api/rollouts/other", { status: { state: "failed" } }],
  ["POST", "/api/rollouts/other/attempt/0/events", { event_type: "reward", data: { value: 1000 } }],
  ["POST", "/api/rollouts/mine/attempt/7/events", { event_type: "reward", data: { value: 1000 } }],
  ["POST", "/proxy/rollout/other/attempt/0/mode/train/openai/v1/chat/completions", { messages: [] }],
  ["POST", "/proxy/rollout/mine/attempt/0/mode/val/openai/v1/chat/completions", { messages: [] }],
  ["POST", "/proxy/rollout/mine/attempt/1/mode/train/openai/v1/chat/completions", { messages: [] }],
];

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
async function body(res: Response | Promise<Response>): Promise<any> {
  return (await res).json();
}

interface StoreKind {
  name: string;
  skip: boolean;
  spec(): Promise<string>;
}

let pg: PostgresServer | undefined;
let dir: string;
const skipPostgres = skipWithoutPostgres();
const STORES: StoreKind[] = [
  { name: "SQLite file", skip: false, spec: async () => `sqlite:${join(dir, `gw-${Math.random()}.db`)}` },
  { name: "PostgreSQL", skip: skipPostgres, spec: async () => pg!.createDatabase() },
];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "arclight-tokens-"));
  if (!skipPostgres) pg = await PostgresServer.start();
});
afterAll(() => {
  pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(STORES)("agent tokens on the gateway ($name)", (kind) => {
  const open: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const thing of open.splice(0).reverse()) await thing.close();
  });

  async function start(): Promise<{ gw: TestGateway; fake: FakeVllm; mine: Rollout }> {
    const fake = await FakeVllm.start();
    open.push(fake);
    const gw = await startTestGateway({ key: KEY, model_name: "policy" }, await openStore(await kind.spec()));
    open.push(gw);
    await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
    const created = await gw.call("POST", "/api/rollouts", [
      { rollout_id: "mine", input: {}, config: { max_attempts: 2 } },
      { rollout_id: "other", input: {} },
    ]);
    const [mine] = (await created.json()) as Rollout[];
    await gw.call("PATCH", "/api/rollouts/mine", { status: { state: "running", last_attempt_id: "0" } });
    return { gw, fake, mine: mine! };
  }

  function as(gw: TestGateway, token: string, method: string, path: string, body?: unknown): Promise<Response> {
    return gw.call(method, path, body, { authorization: `Bearer ${token}` });
  }

  it.skipIf(kind.skip)(
    "refuses an agent token on every admin route and on other rollouts, 403 with detail",
    async () => {
      const { gw } = await start();
      const token = agentKeyFor(KEY, (await body(gw.call("GET", "/api/rollouts/mine"))).rollout, "0");
      const answers: string[] = [];
      for (const [method, path, body] of ADMIN_ROUTES) {
        const res = await as(gw, token, method, path, body);
        const detail = ((await res.json()) as { detail?: unknown }).detail;
        answers.push(`${res.status} ${typeof detail === "string" && detail !== ""} ${method} ${path}`);
      }
      expect(answers).toEqual(ADMIN_ROUTES.map(([method, path]) => `403 true ${method} ${path}`));
      // Nothing the agent tried happened.
      const state = await body(gw.call("GET", "/proxy/state"));
      expect(state.paused).toBe(false);
      expect((await body(gw.call("GET", "/api/models"))).map((m: { endpoint: string }) => m.endpoint)).not.toContain(
        "http://127.0.0.1:1/v1",
      );
      expect((await gw.call("GET", "/api/rollouts/evil")).status).toBe(404);
      expect((await body(gw.call("GET", "/api/rollouts/other/events"))).length).toBe(0);
    },
  );

  it.skipIf(kind.skip)("lets an agent token use its own attempt's proxy, events, rollout and traces", async () => {
    const { gw, fake, mine } = await start();
    const token = agentKeyFor(KEY, mine, "0");
    const proxy = "/proxy/rollout/mine/attempt/0/mode/train/openai/v1";
    const call = await as(gw, token, "POST", `${proxy}/chat/completions`, {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(call.status).toBe(200);
    expect(fake.received).toHaveLength(1);
    expect((await as(gw, token, "GET", `${proxy}/models`)).status).toBe(200);
    const reward = await as(gw, token, "POST", "/api/rollouts/mine/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(reward.status).toBe(200);
    expect((await as(gw, token, "GET", "/api/rollouts/mine")).status).toBe(200);
    const events = (await (await as(gw, token, "GET", "/api/rollouts/mine/events")).json()) as unknown[];
    expect(events).toHaveLength(2);
    const done = await as(gw, token, "PATCH", "/api/rollouts/mine", { status: { state: "succeeded" } });
    expect(done.status).toBe(200);
    expect((await body(done)).status.state).toBe("succeeded");
  });

  it.skipIf(kind.skip)(
    "refuses a PATCH from a superseded attempt's token with 409 and leaves the live attempt alone",
    async () => {
      // Attempt 0 fails and is retried as attempt 1; attempt 0's helper process then reports success late.
      const { gw, mine } = await start();
      const stale = agentKeyFor(KEY, mine, "0");
      await gw.call("PATCH", "/api/rollouts/mine", { status: { state: "failed", error_message: "exit 1" } });
      await gw.call("PATCH", "/api/rollouts/mine", { status: { state: "running", last_attempt_id: "1" } });
      const late = await as(gw, stale, "PATCH", "/api/rollouts/mine", { status: { state: "succeeded" } });
      expect(late.status).toBe(409);
      const answer = await body(late);
      expect(answer).toMatchObject({ code: "stale_attempt", current_attempt_id: "1" });
      expect(answer.detail).toMatch(/attempt 0 was superseded/);
      const after = (await body(gw.call("GET", "/api/rollouts/mine"))).rollout;
      expect(after.status).toMatchObject({ state: "running", last_attempt_id: "1" });
      // The live attempt's own token still finishes it.
      const live = agentKeyFor(KEY, mine, "1");
      expect((await as(gw, live, "PATCH", "/api/rollouts/mine", { status: { state: "succeeded" } })).status).toBe(200);
    },
  );

  it.skipIf(kind.skip)(
    "refuses an agent PATCH that names another attempt (403), and admin PATCHes keep AGL's rules",
    async () => {
      const { gw, mine } = await start();
      const token = agentKeyFor(KEY, mine, "0");
      const takeover = await as(gw, token, "PATCH", "/api/rollouts/mine", { status: { last_attempt_id: "9" } });
      expect(takeover.status).toBe(403);
      expect((await body(takeover)).detail).toMatch(/may not set last_attempt_id 9/);
      // The admin key patches without last_attempt_id, as before.
      expect((await gw.call("PATCH", "/api/rollouts/mine", { status: { state: "succeeded" } })).status).toBe(200);
    },
  );

  it.skipIf(kind.skip)("refuses a stale attempt's events with 409 once the rollout moved on", async () => {
    const { gw, mine } = await start();
    const stale = agentKeyFor(KEY, mine, "0");
    await gw.call("PATCH", "/api/rollouts/mine", { status: { state: "failed" } });
    const res = await as(gw, stale, "POST", "/api/rollouts/mine/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(res.status).toBe(409);
  });

  it.skipIf(kind.skip)("answers 401 to a forged, tampered or expired token", async () => {
    const { gw, mine } = await start();
    const claims = { rollout_id: "mine", attempt_id: "0", mode: "train" as const };
    const forged = mintAgentToken("not-the-admin-key", { ...claims, exp: Date.now() / 1000 + 60 });
    const expired = mintAgentToken(KEY, { ...claims, exp: Date.now() / 1000 - 1 });
    const good = agentKeyFor(KEY, mine, "0");
    // Swap the claims of a good token for another rollout's, keeping its signature.
    const [prefix, , signature] = good.split(".");
    const otherClaims = Buffer.from(JSON.stringify({ ...claims, rollout_id: "other", exp: 9e9 })).toString("base64url");
    const tampered = `${prefix}.${otherClaims}.${signature}`;
    for (const token of [forged, expired, tampered]) {
      const res = await as(gw, token, "GET", "/api/rollouts/mine");
      expect(res.status).toBe(401);
      expect(typeof (await body(res)).detail).toBe("string");
    }
  });

  it.skipIf(kind.skip)("stores an agent's OTLP spans only for its own rollout and attempt", async () => {
    const { gw, mine } = await start();
    const token = agentKeyFor(KEY, mine, "0");
    const span = (rollout: string, spanId: string) => ({
      resource: { attributes: [{ key: "arclight.rollout_id", value: { stringValue: rollout } }] },
      scopeSpans: [
        {
          spans: [
            {
              traceId: "0af7651916cd43dd8448eb211c80319c",
              spanId,
              name: "step",
              kind: 1,
              startTimeUnixNano: "1",
              endTimeUnixNano: "2",
            },
          ],
        },
      ],
    });
    const res = await as(gw, token, "POST", "/v1/traces", {
      resourceSpans: [span("mine", "b7ad6b7169203331"), span("other", "b7ad6b7169203332")],
    });
    expect(res.status).toBe(200);
    expect((await body(res)).partialSuccess.rejectedSpans).toBe("1");
    const spans = async (id: string) =>
      ((await (await gw.call("GET", `/api/rollouts/${id}/events?event_type=span`)).json()) as unknown[]).length;
    expect([await spans("mine"), await spans("other")]).toEqual([1, 0]);
  });
});

describe("model endpoint registration", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ key: KEY }, await openStore(`sqlite:${join(dir, "models.db")}`));
  });
  afterAll(() => gw.close());

  it.each([
    ["a query string", "http://127.0.0.1:9/internal-admin?x="],
    ["credentials", "http://user:pw@127.0.0.1:9/v1"],
    ["a fragment", "http://127.0.0.1:9/v1#x"],
    ["another scheme", "file:///etc/passwd"],
  ])("refuses an endpoint with %s (400, nothing stored)", async (_what, endpoint) => {
    const res = await gw.call("POST", "/api/models", [{ model: "policy", endpoint }]);
    expect([400, 422]).toContain(res.status);
    expect((await body(res)).detail).toBeDefined();
    expect(await (await gw.call("GET", "/api/models")).json()).toEqual([]);
  });

  it("refuses an endpoint with a query with 400 naming the field", async () => {
    const res = await gw.call("POST", "/api/models", [{ model: "policy", endpoint: "http://127.0.0.1:9/x?y=1" }]);
    expect(res.status).toBe(400);
    expect((await body(res)).detail).toBe('body[0].endpoint "http://127.0.0.1:9/x?y=1": a query string is not allowed');
  });

  it("accepts http(s)://host[:port]/path", async () => {
    const res = await gw.call("POST", "/api/models", [{ model: "policy", endpoint: "https://gpu-1.internal:8000/v1" }]);
    expect(res.status).toBe(201);
  });
});
