/**
 * Named, versioned resources end to end: the gateway's HTTP routes (real Fastify on loopback, SQLite file), and the
 * real local controller delivering them to unchanged agent processes as an env var and a file path, each attempt
 * recording the versions it ran with.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { openStore } from "../src/store/open.js";
import { tempDir } from "../src/testing/temp-dir.js";

let h: ControllerHarness;
beforeEach(async () => {
  const dir = tempDir("arclight-resources-");
  h = await startHarness({}, await openStore(`sqlite:${join(dir, "g.db")}`));
});
afterEach(async () => {
  await h.close();
});

/** A node agent that writes the prompt it got (env var and file) to $OUT. */
const READ_PROMPT = `import { readFileSync, writeFileSync } from "node:fs";
writeFileSync(process.env.OUT, JSON.stringify({ env: process.env.SYSTEM_PROMPT, file: readFileSync(process.env.PROMPT_FILE, "utf8") }));
`;

describe("resources API", () => {
  it("stores versions, reads the latest by default and any version on request, and lists the latest", async () => {
    const post = (value: unknown) => h.gateway.call("POST", "/api/resources/prompt", { value });
    const first = await post("Be brief.");
    expect(first.status).toBe(201);
    expect(await first.json()).toMatchObject({ name: "prompt", version: 1, value: "Be brief." });
    expect(await (await post("Show your work.")).json()).toMatchObject({ version: 2 });
    expect(await (await h.gateway.call("GET", "/api/resources/prompt")).json()).toMatchObject({ version: 2 });
    expect(await (await h.gateway.call("GET", "/api/resources/prompt?version=1")).json()).toMatchObject({
      version: 1,
      value: "Be brief.",
    });
    const latest = await (await h.gateway.call("GET", "/api/resources/latest")).json();
    // AGL v1.0 ResourcesUpdate: resources_id names the snapshot, resources maps names to values.
    expect(latest).toMatchObject({ resources_id: "prompt@2", version: 2, resources: { prompt: "Show your work." } });
  });

  it("answers 404 with a detail for an unknown name or version, 422 for a bad name or a missing value", async () => {
    const missing = await h.gateway.call("GET", "/api/resources/nothing");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ detail: "Resource nothing not found" });
    await h.gateway.call("POST", "/api/resources/prompt", { value: "x" });
    expect((await h.gateway.call("GET", "/api/resources/prompt?version=7")).status).toBe(404);
    expect((await h.gateway.call("GET", "/api/resources/prompt?version=zero")).status).toBe(422);
    expect((await h.gateway.call("POST", "/api/resources/bad%20name", { value: 1 })).status).toBe(422);
    expect((await h.gateway.call("POST", "/api/resources/prompt", {})).status).toBe(422);
    expect((await h.gateway.call("POST", "/api/resources/latest", { value: 1 })).status).toBe(422);
  });
});

describe("resources delivered by the controller", () => {
  it("gives each agent the latest or its pinned version, as an env var and a file, and records the version", async () => {
    await h.client.addResource("prompt", "Be brief.");
    await h.client.addResource("prompt", "Show your work.");
    const agent = h.script("read-prompt.mjs", READ_PROMPT);
    const local = (out: string) => ({ command: ["node", agent], env_map: { OUT: out } });
    const [latest, pinned, unknown] = await h.create([
      { input: { out: join(h.dir, "latest.json") }, config: { local: local("input.out") } },
      {
        input: { out: join(h.dir, "pinned.json") },
        metadata: { resources: { prompt: 1 } },
        config: { local: local("input.out") },
      },
      {
        input: { out: join(h.dir, "never.json") },
        metadata: { resources: { prompt: 9 } },
        config: { local: local("input.out") },
      },
    ]);
    h.controller({
      resources_env: { SYSTEM_PROMPT: "prompt" },
      resources_file_env: { PROMPT_FILE: "prompt" },
      resources_dir: join(h.dir, "resources"),
    }).start();
    const done = await h.waitTerminal([latest!.rollout_id, pinned!.rollout_id, unknown!.rollout_id]);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded", "failed"]);
    expect(JSON.parse(readFileSync(join(h.dir, "latest.json"), "utf8"))).toEqual({
      env: "Show your work.",
      file: "Show your work.",
    });
    expect(JSON.parse(readFileSync(join(h.dir, "pinned.json"), "utf8"))).toEqual({
      env: "Be brief.",
      file: "Be brief.",
    });
    const versionsOf = async (rolloutId: string) =>
      (await h.client.getEvents(rolloutId, { eventType: "resources" })).map((e) => e.data);
    expect(await versionsOf(latest!.rollout_id)).toEqual([{ versions: { prompt: 2 } }]);
    expect(await versionsOf(pinned!.rollout_id)).toEqual([{ versions: { prompt: 1 } }]);
    expect(done[2]!.status.error_message ?? "").toContain("Resource prompt: version 9 not found");
  });
});
