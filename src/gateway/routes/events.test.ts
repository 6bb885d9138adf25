import { afterEach, describe, expect, it } from "vitest";
import type { Event } from "../../protocol/index.js";
import type { GatewayConfigInput } from "../config.js";
import { startTestGateway, type TestGateway } from "../testing/serve.js";

let gw: TestGateway;
afterEach(async () => {
  await gw?.close();
});

/** Starts a gateway holding one queuing rollout `r` (attempt "0"). */
async function withRollout(config: Record<string, unknown> = {}, gateway: GatewayConfigInput = {}): Promise<void> {
  gw = await startTestGateway(gateway);
  const res = await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: { q: 1 }, config }]);
  expect(res.status).toBe(201);
}

function post(body: unknown, attempt = "0", rollout = "r"): Promise<Response> {
  return gw.call("POST", `/api/rollouts/${rollout}/attempt/${attempt}/events`, body);
}

describe("POST /api/rollouts/{id}/attempt/{aid}/events", () => {
  it("stores one event and answers 200 with it, numbered from sequence 1", async () => {
    await withRollout();
    const res = await post({ event_type: "reward", data: { value: 0.7, extra: "kept" } });
    expect(res.status).toBe(200);
    const event = (await res.json()) as Event;
    expect(event).toMatchObject({
      event_type: "reward",
      rollout_id: "r",
      attempt_id: "0",
      data: { value: 0.7, extra: "kept" },
      sequence: 1,
      event_id: null,
    });
    expect(typeof event.timestamp).toBe("number");
  });

  it("accepts a list and answers with a list, in order", async () => {
    await withRollout();
    const res = await post([
      { event_type: "log", data: { message: "a" } },
      { event_type: "reward", data: { value: 1 } },
    ]);
    expect(res.status).toBe(200);
    const events = (await res.json()) as Event[];
    expect(events.map((e) => [e.event_type, e.sequence])).toEqual([
      ["log", 1],
      ["reward", 2],
    ]);
  });

  it("answers an empty list with an empty list and stores nothing", async () => {
    await withRollout();
    const res = await post([]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("stores the same event_id twice in one list once", async () => {
    await withRollout();
    const events = (await (
      await post([
        { event_type: "log", event_id: "x", data: { n: 1 } },
        { event_type: "log", event_id: "x", data: { n: 2 } },
      ])
    ).json()) as Event[];
    expect(events[1]).toEqual(events[0]);
    expect(await gw.store.countEvents()).toBe(1);
  });

  it("stores an event_id once: a retried post returns the stored event", async () => {
    await withRollout();
    const first = (await (await post({ event_type: "reward", event_id: "e1", data: { value: 1 } })).json()) as Event;
    const again = (await (await post({ event_type: "reward", event_id: "e1", data: { value: 9 } })).json()) as Event;
    expect(again).toEqual(first);
    const events = (await (await gw.call("GET", "/api/rollouts/r/events")).json()) as Event[];
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toEqual({ value: 1 });
  });

  it("answers 404 for an unknown rollout", async () => {
    await withRollout();
    const res = await post({ event_type: "log", data: {} }, "0", "nope");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("rollout_not_found");
  });

  it("answers 409 for a write to a superseded attempt and keeps what was stored", async () => {
    await withRollout({ max_attempts: 2 });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await post({ event_type: "log", data: { n: 1 } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed" } });
    const stale = await post({ event_type: "reward", data: { value: 1 } }, "0");
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { code: string }).code).toBe("stale_attempt");
    expect(await gw.store.countEvents()).toBe(1);
    expect((await post({ event_type: "reward", data: { value: 1 } }, "1")).status).toBe(200);
  });

  it("stores an event posted after the rollout finished with late: true; a status patch there is still 409", async () => {
    await withRollout();
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded" } });
    const late = await post({ event_type: "reward", data: { value: 1 } });
    expect(late.status).toBe(200);
    expect(await late.json()).toMatchObject({ event_type: "reward", sequence: 1, late: true });
    const patch = await gw.call("PATCH", "/api/rollouts/r", { status: { error_message: "late" } });
    expect(patch.status).toBe(409);
    expect(((await patch.json()) as { code: string }).code).toBe("rollout_finished");
    expect((await gw.store.getRollout("r"))?.status).toMatchObject({ state: "succeeded", error_message: null });
  });

  it.each([
    ["no value", { source: "judge" }],
    ["a null value", { value: null }],
  ])("accepts a reward with %s, as AGL does (its triplet value is null)", async (_name, data) => {
    await withRollout();
    expect((await post({ event_type: "reward", data })).status).toBe(200);
    const triplets = (await (await gw.call("GET", "/api/rollouts/r/events?format=triplet")).json()) as Event[];
    expect(triplets[0]?.data.value).toBeNull();
  });

  it.each([
    ["a string value", { value: "1" }],
    ["a boolean value", { value: true }],
  ])("answers 422 for a reward with %s", async (_name, data) => {
    await withRollout();
    const res = await post({ event_type: "reward", data });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[] }[] };
    expect(body.detail[0]?.loc).toEqual(["body", "data", "value"]);
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("answers 422 for a missing body", async () => {
    await withRollout();
    const res = await gw.call("POST", "/api/rollouts/r/attempt/0/events");
    expect(res.status).toBe(422);
  });

  it("answers 422 for a non-finite reward written as a JSON number too large for a double", async () => {
    await withRollout();
    const huge = await fetch(`${gw.url}/api/rollouts/r/attempt/0/events`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json" },
      body: '{"event_type":"reward","data":{"value":1e999}}',
    });
    expect(huge.status).toBe(422);
  });

  it("rejects the whole list when one item is bad, naming its index, and stores nothing", async () => {
    await withRollout();
    const res = await post([
      { event_type: "log", data: {} },
      { event_type: "reward", data: { value: "x" } },
    ]);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[] }[] };
    expect(body.detail[0]?.loc).toEqual(["body", 1, "data", "value"]);
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("answers 422 for a missing event_type or an unknown field", async () => {
    await withRollout();
    expect((await post({ data: {} })).status).toBe(422);
    expect((await post({ event_type: "log", data: {}, sequence: 4 })).status).toBe(422);
  });

  it("loses nothing under 200 concurrent posts: sequences 1..200, gap-free", async () => {
    await withRollout();
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => post({ event_type: "log", data: { i } })),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    const events = (await (await gw.call("GET", "/api/rollouts/r/events")).json()) as Event[];
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.data.i)).size).toBe(200);
  });
});

describe("GET /api/rollouts/{id}/events", () => {
  it("returns the current attempt's events (last_attempt_id, moved by the retry), filtered by event_type; attempt_id selects another", async () => {
    await withRollout({ max_attempts: 2 });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await post([
      { event_type: "log", data: { a: 0 } },
      { event_type: "reward", data: { value: 0 } },
    ]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed" } });
    await post(
      [
        { event_type: "log", data: { a: 1 } },
        { event_type: "reward", data: { value: 1 } },
      ],
      "1",
    );
    const get = async (q: string) => (await (await gw.call("GET", `/api/rollouts/r/events${q}`)).json()) as Event[];
    expect((await get("")).map((e) => [e.attempt_id, e.event_type])).toEqual([
      ["1", "log"],
      ["1", "reward"],
    ]);
    expect((await get("?event_type=reward")).map((e) => e.data)).toEqual([{ value: 1 }]);
    expect((await get("?attempt_id=0&event_type=reward")).map((e) => e.data)).toEqual([{ value: 0 }]);
    expect(await get("?event_type=nothing")).toEqual([]);
  });

  it("returns an empty list for a rollout without events, and 404 for an unknown rollout", async () => {
    await withRollout();
    expect(await (await gw.call("GET", "/api/rollouts/r/events")).json()).toEqual([]);
    expect((await gw.call("GET", "/api/rollouts/nope/events")).status).toBe(404);
  });

  const modelRequest = (prompt: number[], response: number[], status = "ok") => ({
    event_type: "model_request",
    data: {
      model: "policy",
      model_version: 3,
      request: { messages: [{ role: "user", content: "hi" }] },
      response: {
        prompt_token_ids: prompt,
        choices: [{ token_ids: response, logprobs: { content: response.map(() => ({ logprob: -0.5 })) } }],
      },
      http_status: status === "ok" ? 200 : 502,
      status,
      server: { model: "policy", endpoint: "http://h/v1", version: 3 },
    },
  });
  /** A failed call, a reward, two successful calls of one prompt around another call and a log line. */
  async function postRepeatedPrompt(): Promise<void> {
    await post(modelRequest([1, 2], [10], "error"));
    await post({ event_type: "reward", data: { value: 0.5, extra: "drop", source: "judge" } });
    await post(modelRequest([3, 4], [20]));
    await post({ event_type: "log", data: { message: "m" } });
    await post(modelRequest([1, 2], [30]));
    await post(modelRequest([1, 2], [40]));
  }
  const responses = (events: Event[]) =>
    events.filter((e) => e.event_type === "model_request").map((e) => e.data.response_token_ids);

  it("format=triplet trims model_request and reward, keeps other events and the last call per prompt (AGL)", async () => {
    await withRollout();
    await postRepeatedPrompt();
    const raw = (await (await gw.call("GET", "/api/rollouts/r/events?event_type=model_request")).json()) as Event[];
    expect(raw).toHaveLength(4);
    const triplet = (await (await gw.call("GET", "/api/rollouts/r/events?format=triplet")).json()) as Event[];
    expect(triplet.map((e) => e.event_type)).toEqual(["reward", "model_request", "log", "model_request"]);
    expect(triplet[0]?.data).toEqual({ value: 0.5, source: "judge" });
    expect(triplet[1]?.data).toEqual({
      prompt_token_ids: [3, 4],
      response_token_ids: [20],
      response_log_probs: [-0.5],
      server: { model: "policy", version: 3 },
      http_status: 200,
      status: "ok",
    });
    expect(triplet[2]?.data).toEqual({ message: "m" });
    expect(triplet[3]?.data).toMatchObject({ response_token_ids: [40] });
  });

  it("dedupe=retries drops only the retried failed call and keeps both samples of one prompt", async () => {
    await withRollout();
    await postRepeatedPrompt();
    const triplet = (await (
      await gw.call("GET", "/api/rollouts/r/events?format=triplet&dedupe=retries")
    ).json()) as Event[];
    expect(responses(triplet)).toEqual([[20], [30], [40]]);
    expect(triplet.find((e) => e.data.deduped_retries !== undefined)?.data).toMatchObject({
      response_token_ids: [30],
      deduped_retries: 1,
    });
  });

  it("the gateway's triplet_dedupe sets the rule a request without dedupe gets; dedupe=prompt still asks for AGL's", async () => {
    await withRollout({}, { triplet_dedupe: "retries" });
    await postRepeatedPrompt();
    const get = async (query: string) =>
      responses((await (await gw.call("GET", `/api/rollouts/r/events?format=triplet${query}`)).json()) as Event[]);
    expect(await get("")).toEqual([[20], [30], [40]]);
    expect(await get("&dedupe=prompt")).toEqual([[20], [40]]);
  });

  it("answers 422 naming dedupe for an unknown rule", async () => {
    await withRollout();
    const res = await gw.call("GET", "/api/rollouts/r/events?format=triplet&dedupe=first");
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toContain("dedupe");
  });

  it("answers 422 for an unknown format", async () => {
    await withRollout();
    const res = await gw.call("GET", "/api/rollouts/r/events?format=csv");
    expect(res.status).toBe(422);
  });
});
