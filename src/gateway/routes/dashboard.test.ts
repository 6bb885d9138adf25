import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../store/memory.js";
import { tempDir } from "../../testing/temp-dir.js";
import { buildApp } from "../app.js";
import { type GatewayConfigInput, gatewayConfig } from "../config.js";

const KEY = "gw-key";
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

/** A fake built UI: index.html and one hashed asset. */
function fakeUiDir(): string {
  const dir = tempDir("arclight-ui-");
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>arclight</title>");
  writeFileSync(join(dir, "assets", "index-abc.js"), "console.log(1)");
  return dir;
}

/** A real gateway on loopback with a fake built UI. */
async function start(config: GatewayConfigInput = {}) {
  const store = new MemoryStore();
  const app = buildApp({ store, config: gatewayConfig({ key: KEY, ...config }), uiDir: fakeUiDir() });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  open.push({
    close: async () => {
      await app.close();
      await store.close();
    },
  });
  return { app, store, url };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Logs in and returns the `name=value` part of the session cookie. */
async function login(url: string, key: string): Promise<string> {
  const res = await post(`${url}/ui/login`, { key });
  expect(res.status).toBe(204);
  return (res.headers.get("set-cookie") ?? "").split(";", 1)[0] as string;
}

describe("dashboard auth", () => {
  it("serves the app shell and its assets without a key", async () => {
    const { url } = await start();
    const page = await fetch(`${url}/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const asset = await fetch(`${url}/ui/assets/index-abc.js`);
    expect(asset.headers.get("cache-control")).toContain("immutable");
  });

  it("trades the gateway key for an httpOnly SameSite=Strict session cookie", async () => {
    const { url } = await start();
    const res = await post(`${url}/ui/login`, { key: KEY });
    const cookie = res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^arclight_session=[\w-]{20,};/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
  });

  it("lets a session cookie read the API", async () => {
    const { url } = await start();
    const cookie = await login(url, KEY);
    expect((await fetch(`${url}/api/rollouts`, { headers: { cookie } })).status).toBe(200);
    const session: unknown = await (await fetch(`${url}/ui/session`, { headers: { cookie } })).json();
    expect(session).toEqual({ open: false, authenticated: true });
  });

  it("refuses a wrong key with 401 and a detail", async () => {
    const { url } = await start();
    const res = await post(`${url}/ui/login`, { key: "nope" });
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.json()).toMatchObject({ detail: "Wrong key" });
  });

  // Before: 300 wrong keys went through in 460 ms, each answered 401 at once.
  it("answers 429 with Retry-After once an address sent 10 wrong keys in a minute, even for the right key", async () => {
    const { url } = await start();
    for (let i = 0; i < 10; i++) expect((await post(`${url}/ui/login`, { key: `guess-${i}` })).status).toBe(401);
    for (const key of ["guess-10", KEY]) {
      const res = await post(`${url}/ui/login`, { key });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(Number(res.headers.get("retry-after"))).toBeLessThanOrEqual(60);
      expect(await res.json()).toMatchObject({ code: "login_throttled" });
    }
  });

  it("reads nothing without a key or session", async () => {
    const { url } = await start();
    for (const path of ["/api/runs", "/api/dashboard/rollouts", "/api/dashboard/stream", "/api/rollouts"]) {
      const res = await fetch(url + path, { headers: { cookie: "arclight_session=forged" } });
      expect(res.status, path).toBe(401);
    }
  });

  it("keeps sessions read-only: a cookie cannot write", async () => {
    const { url } = await start();
    const cookie = await login(url, KEY);
    const res = await post(`${url}/api/rollouts`, [{ input: 1 }], { cookie });
    expect(res.status).toBe(401);
  });

  it("logs in with the read-only dashboard key", async () => {
    const { url } = await start({ dashboard_key: "viewer" });
    const cookie = await login(url, "viewer");
    expect((await fetch(`${url}/api/runs`, { headers: { cookie } })).status).toBe(200);
  });

  it("logout ends the session", async () => {
    const { url } = await start();
    const cookie = await login(url, KEY);
    await post(`${url}/ui/logout`, {}, { cookie });
    expect((await fetch(`${url}/api/runs`, { headers: { cookie } })).status).toBe(401);
  });

  it("mounts nothing with dashboard: false", async () => {
    const { url } = await start({ dashboard: false });
    expect((await fetch(`${url}/ui/`)).status).toBe(401);
    const res = await fetch(`${url}/api/runs`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(404);
  });

  it("rejects a login body without a key with 422", async () => {
    const { url } = await start();
    const res = await post(`${url}/ui/login`, {});
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0]?.loc).toEqual(["body", "key"]);
  });
});

describe("dashboard runs", () => {
  const auth = { authorization: `Bearer ${KEY}` };
  const put = (url: string, name: string, body: unknown) =>
    fetch(`${url}/api/runs/${name}`, {
      method: "PUT",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("stores a run's config and steps in step order", async () => {
    const { url } = await start();
    expect((await put(url, "r1", { config: { lr: 1e-5 }, total_steps: 3 })).status).toBe(200);
    await post(`${url}/api/runs/r1/steps`, { step: 1, "reward/mean": 0.5 }, auth);
    await post(`${url}/api/runs/r1/steps`, [{ step: 2, "reward/mean": 0.75, kl: null }], auth);
    const run = (await (await fetch(`${url}/api/runs/r1`, { headers: auth })).json()) as {
      metrics: { step: number }[];
    };
    expect(run).toMatchObject({ name: "r1", config: { lr: 1e-5 }, total_steps: 3, steps: 2, last_step: 2 });
    expect(run.metrics.map((m: { step: number }) => m.step)).toEqual([1, 2]);
  });

  it("a re-posted step replaces it and every later step (a resumed run)", async () => {
    const { url } = await start();
    await put(url, "r1", {});
    await post(`${url}/api/runs/r1/steps`, [{ step: 1 }, { step: 2 }, { step: 3 }], auth);
    await post(`${url}/api/runs/r1/steps`, { step: 2, x: 9 }, auth);
    const run = (await (await fetch(`${url}/api/runs/r1`, { headers: auth })).json()) as {
      metrics: { step: number }[];
    };
    expect(run.metrics).toEqual([{ step: 1 }, { step: 2, x: 9 }]);
  });

  it("refuses steps of an unknown run with 404", async () => {
    const { url } = await start();
    const res = await post(`${url}/api/runs/ghost/steps`, { step: 1 }, auth);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: { loc: unknown }[] }).detail).toBe("Run ghost not found");
  });

  it("refuses a step without an integer step number with 422", async () => {
    const { url } = await start();
    await put(url, "r1", {});
    const res = await post(`${url}/api/runs/r1/steps`, { step: 1.5 }, auth);
    expect(res.status).toBe(422);
  });

  it("refuses a run name with a slash-free but odd character with 422", async () => {
    const { url } = await start();
    expect((await put(url, "a%20b", {})).status).toBe(422);
  });

  it("streams posted steps to an open SSE connection", async () => {
    const { url } = await start();
    await put(url, "live", {});
    const stream = await fetch(`${url}/api/dashboard/stream`, { headers: auth });
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    await post(`${url}/api/runs/live/steps`, { step: 1, "reward/mean": 0.25 }, auth);
    let text = "";
    while (!text.includes("event: steps")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(text).toContain('data: {"run":"live","steps":[{"step":1,"reward/mean":0.25}]}');
  });
});

describe("dashboard finished runs (runs_dir)", () => {
  it("shows every NAME/metrics.jsonl of runs_dir as a run, skipping lines that are not step records", async () => {
    const dir = tempDir("arclight-runs-dir-");
    mkdirSync(join(dir, "alpha"));
    writeFileSync(join(dir, "alpha", "metrics.jsonl"), '{"step":1,"reward/mean":0.25}\n{"step":2,"reward/mean":0.5}\n');
    mkdirSync(join(dir, "beta"));
    writeFileSync(join(dir, "beta", "metrics.jsonl"), '{"step":1,"loss":null}\nnot json\n{"loss":3}\n{"step":2,"lo');
    mkdirSync(join(dir, "no-metrics"));
    const { url } = await start({ runs_dir: dir });
    const auth = { authorization: `Bearer ${KEY}` };
    const { runs } = (await (await fetch(`${url}/api/runs`, { headers: auth })).json()) as { runs: { name: string }[] };
    expect(runs.map((r) => r.name).sort()).toEqual(["alpha", "beta"]);
    const alpha = await (await fetch(`${url}/api/runs/alpha`, { headers: auth })).json();
    expect(alpha).toMatchObject({ steps: 2, last_step: 2, metrics: [{ step: 1, "reward/mean": 0.25 }, { step: 2 }] });
    const beta = await (await fetch(`${url}/api/runs/beta`, { headers: auth })).json();
    expect(beta).toMatchObject({ steps: 1, metrics: [{ step: 1, loss: null }] });
  });

  it("refuses to start on a runs_dir that cannot be read", async () => {
    await expect(start({ runs_dir: join(tempDir("arclight-runs-dir-"), "missing") })).rejects.toThrow(
      /runs_dir .*missing: cannot read the folder \(ENOENT\)/,
    );
  });
});

describe("dashboard rollout table", () => {
  const auth = { authorization: `Bearer ${KEY}` };

  /** Six rollouts of run `r`, steps 0..2, rewards 0, 0.2, … on the terminal ones. */
  async function seeded() {
    const gw = await start();
    const creates = [0, 1, 2, 3, 4, 5].map((k) => ({
      rollout_id: `r-s${k % 3}-${k}`,
      input: { data_id: `d${k % 2}` },
      is_train: k !== 5,
      metadata: { batch_idx: k % 3, sample_idx_in_batch: null },
    }));
    await gw.store.createRollouts(
      creates.map((c) => ({ ...c, config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null } })),
    );
    for (const k of [0, 1, 2, 3]) {
      const id = `r-s${k % 3}-${k}`;
      await gw.store.patchRollout(id, { status: { state: "running" } });
      await gw.store.appendEvents(id, "0", [{ event_type: "reward", data: { value: k / 5 } }]);
      await gw.store.patchRollout(id, { status: { state: "succeeded" } });
    }
    return gw;
  }

  async function list(url: string, query: string) {
    const res = await fetch(`${url}/api/dashboard/rollouts?${query}`, { headers: auth });
    expect(res.status).toBe(200);
    return (await res.json()) as { items: { rollout_id: string; reward: number | null }[]; total: number };
  }

  it("pages newest first with the total", async () => {
    const { url } = await seeded();
    const page = await list(url, "limit=2&offset=1");
    expect(page.total).toBe(6);
    expect(page.items.map((r) => r.rollout_id)).toEqual(["r-s1-4", "r-s0-3"]);
  });

  it("filters by state, split, step, data id and reward range", async () => {
    const { url } = await seeded();
    expect((await list(url, "state=queuing")).total).toBe(2);
    expect((await list(url, "is_train=false")).items.map((r) => r.rollout_id)).toEqual(["r-s2-5"]);
    expect((await list(url, "step=1")).total).toBe(2);
    expect((await list(url, "data_id=d1")).total).toBe(3);
    const rewarded = await list(url, "reward_min=0.1&reward_max=0.5");
    expect(rewarded.items.map((r) => [r.rollout_id, r.reward])).toEqual([
      ["r-s2-2", 0.4],
      ["r-s1-1", 0.2],
    ]);
  });

  it("names the agent by its export or script, not its file path, and filters by that name", async () => {
    const gw = await start();
    const locals = [
      { agent_class: "/home/me/proj/examples/calculator/agent.ts:calculatorRollout" },
      { agent_class: "/home/me/proj/agents/solver.js:default" },
      { command: ["python3", "/home/me/proj/agents/agent.py", "--fast"] },
      { agent_class: "/home/me/proj/agent.ts:calculatorRollout" },
    ];
    await gw.store.createRollouts(
      locals.map((local, k) => ({
        rollout_id: `a${k}`,
        input: k,
        is_train: true,
        config: { timeout_seconds: 60, max_attempts: 1, local: { env_map: {}, ...local }, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null, ...(k === 3 ? { agent: "planner" } : {}) },
      })),
    );
    const page = (await list(gw.url, "")) as unknown as { items: { rollout_id: string; agent: string }[] };
    expect(Object.fromEntries(page.items.map((r) => [r.rollout_id, r.agent]))).toEqual({
      a0: "calculatorRollout",
      a1: "solver",
      a2: "python3 agent.py --fast",
      a3: "planner",
    });
    expect((await list(gw.url, "agent=calculator")).items.map((r) => r.rollout_id)).toEqual(["a0"]);
  });

  it("sees state changes made after an earlier query", async () => {
    const { url, store } = await seeded();
    expect((await list(url, "state=failed")).total).toBe(0);
    await store.patchRollout("r-s1-4", { status: { state: "failed", error_message: "boom" } });
    expect((await list(url, "state=failed")).items.map((r) => r.rollout_id)).toEqual(["r-s1-4"]);
  });

  it("rebuilds after a delete", async () => {
    const { url, store } = await seeded();
    expect((await list(url, "")).total).toBe(6);
    await store.deleteRollout("r-s0-0");
    await store.createRollouts([
      {
        rollout_id: "new",
        input: 1,
        is_train: true,
        config: { timeout_seconds: 1, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null },
      },
    ]);
    const ids = (await list(url, "limit=100")).items.map((r) => r.rollout_id);
    expect(ids).toHaveLength(6);
    expect(ids).not.toContain("r-s0-0");
    expect(ids[0]).toBe("new");
  });

  it("answers a bad filter with 422 naming it", async () => {
    const { url } = await seeded();
    const res = await fetch(`${url}/api/dashboard/rollouts?reward_min=abc`, { headers: auth });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0]?.loc).toEqual(["query", "reward_min"]);
  });
});

describe("dashboard detokenize", () => {
  it("answers malformed ids with 422 naming the parameter", async () => {
    const { url } = await start();
    const res = await fetch(`${url}/api/dashboard/detokenize?model=policy&ids=1,x`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0]?.loc).toEqual(["query", "ids"]);
  });

  // Before: the ids went only in the query, and 4,096 six-digit ids (28 KiB) passed Node's 16 KiB header limit: 431.
  it("takes the documented 4,096 ids in a POST body, from a session cookie too, and refuses 4,097 with 422", async () => {
    const { url } = await start();
    const cookie = await login(url, KEY);
    const ids = Array.from({ length: 4096 }, (_, i) => 151_000 + i);
    const res = await post(`${url}/api/dashboard/detokenize`, { model: "none", ids }, { cookie });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ texts: {} });
    const asQuery = await fetch(`${url}/api/dashboard/detokenize?model=none&ids=${ids.join(",")}`, {
      headers: { cookie },
    });
    expect(asQuery.status).toBe(431);
    const tooMany = await post(`${url}/api/dashboard/detokenize`, { model: "none", ids: [...ids, 1] }, { cookie });
    expect(tooMany.status).toBe(422);
    expect(((await tooMany.json()) as { detail: { loc: unknown }[] }).detail[0]?.loc).toEqual(["body", "ids"]);
  });

  it("lets a session cookie POST no other API route", async () => {
    const { url } = await start();
    const cookie = await login(url, KEY);
    const res = await post(`${url}/api/rollouts`, [{ input: {} }], { cookie });
    expect(res.status).toBe(401);
  });

  it("answers an empty map for a model without a server", async () => {
    const { url } = await start();
    const res = await fetch(`${url}/api/dashboard/detokenize?model=none&ids=1,2`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await res.json()).toEqual({ texts: {} });
  });
});
