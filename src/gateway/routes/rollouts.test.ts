import { afterEach, describe, expect, it } from "vitest";
import type { Rollout } from "../../protocol/index.js";
import { startTestGateway, type TestGateway } from "../testing/serve.js";

let gw: TestGateway;
afterEach(async () => {
  await gw?.close();
});

async function create(items: unknown[]): Promise<Rollout[]> {
  const res = await gw.call("POST", "/api/rollouts", items);
  expect(res.status).toBe(201);
  return (await res.json()) as Rollout[];
}

async function patchState(id: string, state: string): Promise<Response> {
  return gw.call("PATCH", `/api/rollouts/${id}`, { status: { state } });
}

describe("POST /api/rollouts", () => {
  it("creates rollouts with defaults and answers 201 with the stored list in order", async () => {
    gw = await startTestGateway();
    const rollouts = await create([{ input: { prompt: "hi" }, metadata: { batch_idx: 1 } }, { input: 7 }]);
    expect(rollouts).toHaveLength(2);
    expect(rollouts[0]?.input).toEqual({ prompt: "hi" });
    expect(rollouts[0]?.metadata.batch_idx).toBe(1);
    expect(rollouts[0]?.status.state).toBe("queuing");
    expect(rollouts[0]?.status.last_attempt_id).toBeNull(); // AGL: no attempt until one is named
    expect(rollouts[0]?.is_train).toBe(true);
    expect(rollouts[1]?.input).toBe(7);
    expect(rollouts[0]?.rollout_id).not.toBe(rollouts[1]?.rollout_id);
  });

  it("returns an existing rollout_id unchanged, its state and events intact (re-enqueue race)", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "fixed-1", input: { prompt: "a" } }]);
    expect((await patchState("fixed-1", "running")).status).toBe(200);
    await gw.call("POST", "/api/rollouts/fixed-1/attempt/0/events", { event_type: "reward", data: { value: 1 } });
    const [again] = await create([{ rollout_id: "fixed-1", input: { prompt: "DIFFERENT" } }]);
    expect(again?.input).toEqual({ prompt: "a" });
    expect(again?.status.state).toBe("running");
    const detail = (await (await gw.call("GET", "/api/rollouts/fixed-1")).json()) as { attempts: string[] };
    expect(detail.attempts).toEqual(["0"]);
    const events = (await (await gw.call("GET", "/api/rollouts/fixed-1/events")).json()) as unknown[];
    expect(events).toHaveLength(1);
  });

  it("answers 422 with FastAPI-shaped details for a non-list body, a missing input or an unknown field", async () => {
    gw = await startTestGateway();
    const notList = await gw.call("POST", "/api/rollouts", { input: 1 });
    expect(notList.status).toBe(422);
    const missing = await gw.call("POST", "/api/rollouts", [{ is_train: true }]);
    expect(missing.status).toBe(422);
    const body = (await missing.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(body.detail[0]?.loc).toEqual(["body", 0, "input"]);
    const unknown = await gw.call("POST", "/api/rollouts", [{ input: 1, colour: "red" }]);
    expect(unknown.status).toBe(422);
    const unknownBody = (await unknown.json()) as { detail: { loc: unknown[]; type: string }[] };
    expect(unknownBody.detail[0]).toMatchObject({ loc: ["body", 0], type: "unrecognized_keys" });
    const badId = await gw.call("POST", "/api/rollouts", [{ input: 1, rollout_id: "a/b" }]);
    expect(badId.status).toBe(422);
    expect(await gw.store.listRollouts()).toEqual([]);
  });

  it("answers 422 for a config.local the controller could never run, and stores nothing", async () => {
    gw = await startTestGateway();
    const both = await gw.call("POST", "/api/rollouts", [
      { input: 1, config: { local: { command: ["python3", "agent.py"], agent_class: "agent.js:Agent" } } },
    ]);
    expect(both.status).toBe(422);
    const bothBody = (await both.json()) as { detail: { loc: unknown[]; msg: string }[] };
    expect(bothBody.detail[0]).toMatchObject({
      loc: ["body", 0, "config", "local", "agent_class"],
      msg: "set command or agent_class, not both",
    });
    for (const name of ["1BAD", "BAD=X", "WITH SPACE", ""]) {
      const res = await gw.call("POST", "/api/rollouts", [
        { input: { q: 1 }, config: { local: { command: ["true"], env_map: { [name]: "input.q" } } } },
      ]);
      expect(res.status, name).toBe(422);
      const body = (await res.json()) as { detail: { loc: unknown[]; msg: string }[] };
      expect(body.detail[0]?.loc.slice(0, 5)).toEqual(["body", 0, "config", "local", "env_map"]);
      expect(body.detail[0]?.msg).toMatch(/env var name/);
    }
    expect(await gw.store.listRollouts()).toEqual([]);
    const ok = await gw.call("POST", "/api/rollouts", [
      { input: { q: 1 }, config: { local: { command: ["true"], env_map: { _Q1: "input.q", Q: "input.q" } } } },
    ]);
    expect(ok.status).toBe(201);
  });

  it("answers 422 for a missing body", async () => {
    gw = await startTestGateway();
    const res = await gw.call("POST", "/api/rollouts");
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]?.loc).toEqual(["body"]);
  });
});

describe("GET /api/rollouts", () => {
  it("filters by repeated state_in, by is_train, and pages with limit and offset in creation order", async () => {
    gw = await startTestGateway();
    const made = await create([
      { rollout_id: "a", input: 1, is_train: true },
      { rollout_id: "b", input: 2, is_train: false },
      { rollout_id: "c", input: 3, is_train: true },
      { rollout_id: "d", input: 4, is_train: true },
    ]);
    expect(made).toHaveLength(4);
    await patchState("b", "running");
    await patchState("c", "failed");
    const ids = async (query: string) =>
      ((await (await gw.call("GET", `/api/rollouts${query}`)).json()) as Rollout[]).map((r) => r.rollout_id);
    expect(await ids("")).toEqual(["a", "b", "c", "d"]);
    expect(await ids("?state_in=queuing&state_in=running")).toEqual(["a", "b", "d"]);
    expect(await ids("?state_in=running")).toEqual(["b"]);
    expect(await ids("?is_train=false")).toEqual(["b"]);
    expect(await ids("?is_train=true&state_in=queuing")).toEqual(["a", "d"]);
    expect(await ids("?limit=2")).toEqual(["a", "b"]);
    expect(await ids("?limit=2&offset=2")).toEqual(["c", "d"]);
    expect(await ids("?offset=10")).toEqual([]);
  });

  it("returns at most 500 rollouts when no limit is given", async () => {
    gw = await startTestGateway();
    await create(Array.from({ length: 501 }, (_, i) => ({ rollout_id: `r${i}`, input: i })));
    const page = (await (await gw.call("GET", "/api/rollouts")).json()) as Rollout[];
    expect(page).toHaveLength(500);
    expect(page.at(-1)?.rollout_id).toBe("r499");
  });

  it.each([
    ["state_in=cancelled", "state_in"],
    ["limit=0", "limit"],
    ["limit=abc", "limit"],
    ["limit=1&limit=2", "limit"],
    ["offset=-1", "offset"],
    ["limit=10001", "limit"],
    ["is_train=maybe", "is_train"],
  ])("answers 422 naming the query parameter for %s", async (query, name) => {
    gw = await startTestGateway();
    const res = await gw.call("GET", `/api/rollouts?${query}`);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[] }[] };
    expect(body.detail[0]?.loc.slice(0, 2)).toEqual(["query", name]);
  });
});

describe("GET /api/rollouts/terminal", () => {
  it("lists rollouts in completion order with a cursor; non-terminal rollouts never appear", async () => {
    gw = await startTestGateway();
    await create([
      { rollout_id: "pending", input: { data_id: "p" } },
      { rollout_id: "a", input: { data_id: "a" }, is_train: true },
      { rollout_id: "b", input: { instance_id: "inst-b" }, is_train: false },
      { rollout_id: "c", input: "plain", is_train: true },
    ]);
    for (const id of ["b", "a", "c"]) await patchState(id, "running");
    await patchState("b", "succeeded");
    await patchState("a", "failed");
    await patchState("c", "succeeded");
    const page = async (q: string) => (await gw.call("GET", `/api/rollouts/terminal${q}`)).json();
    expect(await page("?after=0&limit=2")).toEqual({
      items: [
        { rollout_id: "b", state: "succeeded", data_id: "inst-b", is_train: false },
        { rollout_id: "a", state: "failed", data_id: "a", is_train: true },
      ],
      next_after: 2,
      total_terminal: 3,
    });
    expect(await page("?after=2&limit=2")).toEqual({
      items: [{ rollout_id: "c", state: "succeeded", data_id: "", is_train: true }],
      next_after: 3,
      total_terminal: 3,
    });
    expect(await page("?after=3")).toEqual({ items: [], next_after: 3, total_terminal: 3 });
    expect(((await page("")) as { items: unknown[] }).items).toHaveLength(3);
  });

  it("answers 422 for a negative cursor or a zero limit", async () => {
    gw = await startTestGateway();
    expect((await gw.call("GET", "/api/rollouts/terminal?after=-1")).status).toBe(422);
    expect((await gw.call("GET", "/api/rollouts/terminal?limit=0")).status).toBe(422);
  });
});

describe("GET /api/rollouts/{id}", () => {
  it("returns the rollout and the attempts that have events, oldest first", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1, config: { max_attempts: 2 } }]);
    const empty = (await (await gw.call("GET", "/api/rollouts/r")).json()) as { rollout: Rollout; attempts: string[] };
    expect(empty.rollout.rollout_id).toBe("r");
    expect(empty.attempts).toEqual([]);
    await patchState("r", "running");
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: {} });
    // A failed attempt with attempts left is retried: state back to queuing, attempt "1".
    const retried = (await (await patchState("r", "failed")).json()) as Rollout;
    expect(retried.status).toMatchObject({ state: "queuing", last_attempt_id: "1" });
    await gw.call("POST", "/api/rollouts/r/attempt/1/events", { event_type: "log", data: {} });
    const detail = (await (await gw.call("GET", "/api/rollouts/r")).json()) as { attempts: string[] };
    expect(detail.attempts).toEqual(["0", "1"]);
  });

  it("answers 404 {detail} for an unknown rollout", async () => {
    gw = await startTestGateway();
    const res = await gw.call("GET", "/api/rollouts/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Rollout nope not found", code: "rollout_not_found" });
  });
});

describe("PATCH /api/rollouts/{id}", () => {
  it("moves queuing -> running -> succeeded, bumping status.version and keeping other status fields", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1 }]);
    const running = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", k8s_job_name: "job-1" } });
    expect(running.status).toBe(200);
    const runningBody = (await running.json()) as Rollout;
    expect(runningBody.status).toMatchObject({ state: "running", k8s_job_name: "job-1", version: 2 });
    const done = (await (await patchState("r", "succeeded")).json()) as Rollout;
    expect(done.status).toMatchObject({ state: "succeeded", k8s_job_name: "job-1", version: 3 });
  });

  it("answers 409 for a transition the state machine forbids, leaving the rollout unchanged", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1 }]);
    await patchState("r", "running");
    const back = await patchState("r", "queuing");
    expect(back.status).toBe(409);
    expect(await back.json()).toEqual({
      detail: "Rollout r: cannot transition running -> queuing",
      code: "invalid_transition",
    });
    expect((await gw.store.getRollout("r"))?.status).toMatchObject({ state: "running", version: 2 });
  });

  it("answers 409 when last_attempt_id names a superseded attempt", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1, config: { max_attempts: 2 } }]);
    await patchState("r", "running");
    await patchState("r", "failed");
    const stale = await gw.call("PATCH", "/api/rollouts/r", { status: { last_attempt_id: "0" } });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { code: string }).code).toBe("stale_attempt");
  });

  it("a patch naming a new attempt makes it current; one naming the superseded attempt gets 409 naming the current", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "p1", input: 1 }]);
    const moved = await gw.call("PATCH", "/api/rollouts/p1", { status: { state: "running", last_attempt_id: "abc" } });
    expect(moved.status).toBe(200);
    expect((await gw.store.getRollout("p1"))?.status).toMatchObject({ state: "running", last_attempt_id: "abc" });
    const stale = await gw.call("PATCH", "/api/rollouts/p1", { status: { state: "succeeded", last_attempt_id: "0" } });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({
      rollout_id: "p1",
      attempt_id: "0",
      current_attempt_id: "abc",
      detail: "Rollout p1: attempt 0 was superseded (current: abc)",
      code: "stale_attempt",
    });
    expect((await gw.store.getRollout("p1"))?.status.state).toBe("running");
  });

  it("answers 422 for an unknown state, an unknown status field or a non-status field", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1 }]);
    expect((await patchState("r", "cancelled")).status).toBe(422);
    expect((await gw.call("PATCH", "/api/rollouts/r", { status: { cancel_requested: true } })).status).toBe(422);
    const input = await gw.call("PATCH", "/api/rollouts/r", { input: { evil: true } });
    expect(input.status).toBe(422);
    expect(((await input.json()) as { detail: { loc: unknown[] }[] }).detail[0]?.loc).toEqual(["body"]);
    expect((await gw.store.getRollout("r"))?.status.version).toBe(1);
  });

  it("answers 404 for an unknown rollout", async () => {
    gw = await startTestGateway();
    expect((await patchState("nope", "running")).status).toBe(404);
  });
});

describe("DELETE /api/rollouts/{id}", () => {
  it("answers 204 and removes the rollout and its events; deleting again is also 204", async () => {
    gw = await startTestGateway();
    await create([{ rollout_id: "r", input: 1 }]);
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "reward", data: { value: 0.7 } });
    const deleted = await gw.call("DELETE", "/api/rollouts/r");
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect((await gw.call("GET", "/api/rollouts/r")).status).toBe(404);
    expect((await gw.call("GET", "/api/rollouts/r/events")).status).toBe(404);
    expect((await gw.call("DELETE", "/api/rollouts/r")).status).toBe(204);
    expect((await gw.call("DELETE", "/api/rollouts/never-existed")).status).toBe(204);
  });
});
