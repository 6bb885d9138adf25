import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { tempDir } from "../testing/temp-dir.js";
import { combineReporters, RunPoster, readMetricsFile } from "./run-poster.js";

const gateways: TestGateway[] = [];
const clients: GatewayClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const gw of gateways.splice(0)) await gw.close();
});

async function setup(config = {}) {
  const gw = await startTestGateway(config);
  gateways.push(gw);
  const client = new GatewayClient({ baseUrl: gw.url, key: "test-key", retries: 0 });
  clients.push(client);
  return { gw, client };
}

describe("RunPoster", () => {
  it("registers the run and posts each step to the gateway", async () => {
    const { gw, client } = await setup();
    const poster = new RunPoster(client, "run-a");
    poster.start({ lr: 0.1 }, 2);
    poster.onStep({ step: 1, "reward/mean": 0.5 });
    poster.onStep({ step: 2, "reward/mean": 0.75 });
    await poster.flush();
    const run = (await (await gw.call("GET", "/api/runs/run-a")).json()) as Record<string, unknown>;
    expect(run).toMatchObject({ config: { lr: 0.1 }, total_steps: 2, last_step: 2 });
    expect(run.metrics).toEqual([
      { step: 1, "reward/mean": 0.5 },
      { step: 2, "reward/mean": 0.75 },
    ]);
  });

  it("re-posts the steps of an existing metrics.jsonl first (a resumed or old run)", async () => {
    const { gw, client } = await setup();
    const path = join(tempDir("arclight-poster-"), "metrics.jsonl");
    writeFileSync(path, '{"step":1,"reward/mean":0.1}\n{"step":2,"reward/mean":0.2}\n{"step":3,"rew');
    const poster = new RunPoster(client, "resumed");
    poster.start({}, null, path);
    poster.onStep({ step: 3, "reward/mean": 0.3 });
    await poster.flush();
    const run = (await (await gw.call("GET", "/api/runs/resumed")).json()) as { metrics: { step: number }[] };
    expect(run.metrics.map((m) => m.step)).toEqual([1, 2, 3]);
  });

  it("stops posting after a failure without throwing (a gateway with the dashboard off)", async () => {
    const { client } = await setup({ dashboard: false });
    const poster = new RunPoster(client, "run-b");
    poster.start({}, 1);
    poster.onStep({ step: 1 });
    await expect(poster.flush()).resolves.toBeUndefined();
  });
});

describe("readMetricsFile", () => {
  it("skips blank and torn lines", () => {
    const path = join(tempDir("arclight-metrics-"), "m.jsonl");
    writeFileSync(path, '{"step":1}\n\n{"step":');
    expect(readMetricsFile(path)).toEqual([{ step: 1 }]);
  });
});

describe("combineReporters", () => {
  it("calls every reporter in order", () => {
    const calls: string[] = [];
    const make = (name: string) => ({
      onStep: () => void calls.push(`${name}.step`),
      close: () => void calls.push(`${name}.close`),
    });
    const both = combineReporters(make("a"), make("b"));
    both.onStep({ step: 1 }, 1);
    both.close();
    expect(calls).toEqual(["a.step", "b.step", "a.close", "b.close"]);
  });
});
