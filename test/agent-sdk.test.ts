import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

/** Agents import the SDK's TypeScript source, so they run under tsx's loader. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const SDK = pathToFileURL(fileURLToPath(new URL("../src/agent/index.ts", import.meta.url))).href;

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness({ NODE_OPTIONS: `--import=${TSX_LOADER}` });
});
afterEach(async () => {
  await h.close();
});

describe("agent SDK inside a controller-run rollout", () => {
  it("posts a reward that the gateway returns, and builds an OpenAI client on the attempt's proxy URL", async () => {
    const agent = h.script(
      "sdk-agent.mjs",
      [
        `import { writeFileSync } from "node:fs";`,
        `import { emitEvent, emitReward, fromEnv, openaiClient } from ${JSON.stringify(SDK)};`,
        "const env = fromEnv();",
        "const client = openaiClient();",
        "await emitEvent('progress', { step: 1 });",
        "await emitReward(0.75, { source: 'judge', reason: '3 of 4 checks passed' });",
        "writeFileSync(process.env.OUT, JSON.stringify({ env, baseURL: client.baseURL }));",
      ].join("\n"),
    );
    const out = join(h.dir, "sdk-out.json");
    const [rollout] = await h.create([
      { input: { out }, config: { local: { command: ["node", agent], env_map: { OUT: "input.out" } } } },
    ]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
    expect(done!.status.state).toBe("succeeded");

    const rewards = await h.client.getEvents(rollout!.rollout_id, { eventType: "reward", format: "triplet" });
    expect(rewards.map((e) => e.data)).toEqual([{ value: 0.75, source: "judge", reason: "3 of 4 checks passed" }]);
    const all = await h.client.getEvents(rollout!.rollout_id);
    expect(all.map((e) => e.event_type)).toEqual(["progress", "reward"]);

    const seen = JSON.parse(readFileSync(out, "utf8")) as { env: Record<string, string>; baseURL: string };
    const rid = rollout!.rollout_id;
    expect(seen.env).toEqual({
      baseURL: `${h.gateway.url}/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1`,
      apiKey: expect.stringMatching(/^aglt1\./), // a token of this attempt, not the admin key
      rolloutId: rid,
      attemptId: "0",
      eventUrl: `${h.gateway.url}/api/rollouts/${rid}/attempt/0/events`,
      // From the OTEL_* variables the controller sets.
      tracesUrl: `${h.gateway.url}/v1/traces`,
      serviceName: "arclight-agent",
    });
    expect(seen.baseURL).toBe(seen.env.baseURL);
  });

  it("fails clearly when SDK code runs outside a rollout", async () => {
    const agent = h.script(
      "outside.mjs",
      `import { fromEnv } from ${JSON.stringify(SDK)};\nfor (const k of Object.keys(process.env)) if (k.startsWith("AGL_")) delete process.env[k];\nfromEnv();\n`,
    );
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["node", agent] } } }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
    expect(done!.status.error_message).toBe("exited with code 1");
    const [log] = await h.client.getEvents(rollout!.rollout_id, { eventType: "log" });
    expect((log!.data as { text: string }).text).toContain("NotInRollout: not running inside an arclight rollout");
  });
});
