import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import type { Event, Rollout, TerminalPage } from "../src/protocol/index.js";
import { openStore } from "../src/store/open.js";

let dir: string;
let spec: string;
const gateways: TestGateway[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "arclight-gw-sqlite-"));
  spec = `sqlite:${join(dir, "gateway.db")}`;
});
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<TestGateway> {
  const gw = await startTestGateway({}, await openStore(spec));
  gateways.push(gw);
  return gw;
}

async function json<T>(res: Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}

describe("gateway on a SQLite file", () => {
  it("keeps rollouts, events, event_ids and the terminal cursor across a restart on the same file", async () => {
    const first = await start();
    await first.call("POST", "/api/rollouts", [
      { rollout_id: "a", input: { data_id: "da" } },
      { rollout_id: "b", input: { data_id: "db" }, is_train: false },
      { rollout_id: "c", input: { data_id: "dc" } },
    ]);
    for (const id of ["a", "b"]) await first.call("PATCH", `/api/rollouts/${id}`, { status: { state: "running" } });
    await first.call("POST", "/api/rollouts/a/attempt/0/events", [
      { event_type: "model_request", data: { response: { prompt_token_ids: [1, 2], choices: [{ token_ids: [3] }] } } },
      { event_type: "reward", event_id: "reward-a", data: { value: 0.25, source: "judge" } },
    ]);
    await first.call("POST", "/api/rollouts/c/attempt/0/events", { event_type: "log", data: { n: 1 } });
    await first.call("PATCH", "/api/rollouts/b", { status: { state: "failed" } });
    await first.call("PATCH", "/api/rollouts/a", { status: { state: "succeeded" } });
    const page1 = await json<TerminalPage>(first.call("GET", "/api/rollouts/terminal?after=0&limit=1"));
    expect(page1.items.map((i) => i.rollout_id)).toEqual(["b"]);
    const rolloutsBefore = await json<Rollout[]>(first.call("GET", "/api/rollouts"));
    const eventsBefore = await json<Event[]>(first.call("GET", "/api/rollouts/a/events"));
    const tripletBefore = await json<Event[]>(first.call("GET", "/api/rollouts/a/events?format=triplet"));
    await first.close();
    gateways.splice(0);

    const second = await start();
    expect(await json<Rollout[]>(second.call("GET", "/api/rollouts"))).toEqual(rolloutsBefore);
    expect(await json<Event[]>(second.call("GET", "/api/rollouts/a/events"))).toEqual(eventsBefore);
    expect(await json<Event[]>(second.call("GET", "/api/rollouts/a/events?format=triplet"))).toEqual(tripletBefore);
    expect(await json<TerminalPage>(second.call("GET", `/api/rollouts/terminal?after=${page1.next_after}`))).toEqual({
      items: [{ rollout_id: "a", state: "succeeded", data_id: "da", is_train: true }],
      next_after: 2,
      total_terminal: 2,
    });
    const again = await json<Event>(
      second.call("POST", "/api/rollouts/a/attempt/0/events", {
        event_type: "reward",
        event_id: "reward-a",
        data: { value: 9 },
      }),
    );
    expect(again).toEqual(eventsBefore[1]);
    // "a" is succeeded: a replayed event_id is answered with the stored event, a new event is stored late.
    const late = await json<Event>(
      second.call("POST", "/api/rollouts/a/attempt/0/events", { event_type: "log", data: {} }),
    );
    expect(late).toMatchObject({ sequence: 3, late: true });
    const next = await json<Event>(
      second.call("POST", "/api/rollouts/c/attempt/0/events", { event_type: "log", data: { n: 2 } }),
    );
    expect(next.sequence).toBe(2);
    expect(await json<{ attempts: string[] }>(second.call("GET", "/api/rollouts/a"))).toMatchObject({
      attempts: ["0"],
    });
  });

  it("answers 422 for an event_type with a lone surrogate; a well-formed emoji type is stored and filterable", async () => {
    // SQLite would have stored "\ud800" as U+FFFD, so the event echoed back would never match its own type again.
    const gw = await start();
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: 1 }]);
    const bad = await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "ü🚀\ud800", data: {} });
    expect(bad.status).toBe(422);
    const detail = ((await bad.json()) as { detail: { loc: unknown[]; msg: string }[] }).detail;
    expect(detail[0]).toMatchObject({ loc: ["body", "event_type"], msg: expect.stringMatching(/lone surrogate/) });
    expect(await gw.store.countEvents()).toBe(0);
    const data = { text: "half a pair: \udc00" }; // payloads are JSON text in SQLite: they survive as sent
    const ok = await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "ü🚀", data });
    expect(ok.status).toBe(200);
    const found = await json<Event[]>(gw.call("GET", `/api/rollouts/r/events?event_type=${encodeURIComponent("ü🚀")}`));
    expect(found.map((e) => [e.event_type, e.data])).toEqual([["ü🚀", data]]);
  });

  it("loses nothing under 200 concurrent event posts: sequences 1..200, gap-free", async () => {
    const gw = await start();
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: 1 }]);
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: { i } }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 200 }, () => 200));
    const events = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.data.i)).size).toBe(200);
  });
});
