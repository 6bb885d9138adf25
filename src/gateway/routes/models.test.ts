import { afterEach, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/serve.js";

let gw: TestGateway;
afterEach(async () => {
  await gw?.close();
});

describe("model routes", () => {
  it("POST /api/models answers 201 with the list and upserts by (model, endpoint)", async () => {
    gw = await startTestGateway();
    const created = await gw.call("POST", "/api/models", [
      { model: "policy", endpoint: "http://a:8000/v1", version: 3 },
      { model: "policy", endpoint: "http://b:8000/v1" },
    ]);
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual([
      { model: "policy", endpoint: "http://a:8000/v1", version: 3 },
      { model: "policy", endpoint: "http://b:8000/v1", version: 0 },
    ]);
    await gw.call("POST", "/api/models", [{ model: "policy", endpoint: "http://a:8000/v1", version: 4 }]);
    const listed = (await (await gw.call("GET", "/api/models?model=policy")).json()) as { version: number }[];
    expect(listed.map((m) => m.version).sort()).toEqual([0, 4]);
  });

  it("DELETE /api/models answers {status: ok} and removes every endpoint, or those of one model", async () => {
    gw = await startTestGateway();
    await gw.call("POST", "/api/models", [
      { model: "a", endpoint: "http://a/v1" },
      { model: "b", endpoint: "http://b/v1" },
    ]);
    const one = await gw.call("DELETE", "/api/models?model=a");
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ status: "ok" });
    expect(((await (await gw.call("GET", "/api/models")).json()) as { model: string }[]).map((m) => m.model)).toEqual([
      "b",
    ]);
    expect(await (await gw.call("DELETE", "/api/models")).json()).toEqual({ status: "ok" });
    expect(await (await gw.call("GET", "/api/models")).json()).toEqual([]);
  });

  it("answers 422 for a bad endpoint URL, a negative version, an unknown field or an over-long name or URL", async () => {
    gw = await startTestGateway();
    for (const body of [
      [{ model: "m".repeat(1001), endpoint: "http://h/v1" }],
      [{ model: "m", endpoint: `http://h/${"v".repeat(2048)}` }],
      [{ model: "m", endpoint: "not a url" }],
      [{ model: "m", endpoint: "http://h/v1", version: -1 }],
      [{ model: "m", endpoint: "http://h/v1", weight: 2 }],
      { model: "m", endpoint: "http://h/v1" },
    ]) {
      const res = await gw.call("POST", "/api/models", body);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]?.loc[0]).toBe("body");
    }
    expect(await gw.store.listModels()).toEqual([]);
  });
});

describe("GET /healthz", () => {
  it('answers {"status":"ok"}', async () => {
    gw = await startTestGateway();
    const res = await fetch(`${gw.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });
});
