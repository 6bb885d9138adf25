import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { verifyAgentToken } from "../src/protocol/agent-token.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

/** A node agent that writes its whole environment as JSON to $OUT. */
const DUMP_ENV =
  "import { writeFileSync } from 'node:fs';\nwriteFileSync(process.env.OUT, JSON.stringify(process.env));\n";

describe("agent environment", () => {
  it("gives the agent the proxy URL (train and val), event URL, key, ids and env_map values", async () => {
    const agent = h.script("dump-env.mjs", DUMP_ENV);
    const input = {
      out: join(h.dir, "env-train.json"),
      question: { text: "what is 6*7?" },
      meta: { tags: ["a", "b"], level: 2 },
      count: 42,
      flag: true,
      nothing: null,
      items: ["first", "second"],
    };
    const envMap = {
      OUT: "input.out",
      QUESTION: "input.question.text",
      META: "input.meta",
      COUNT: "input.count",
      FLAG: "input.flag",
      NOTHING: "input.nothing",
      SECOND: "input.items.1",
      BATCH: "metadata.batch_idx",
      AGL_KEY: "input.question.text",
    };
    const [train, val] = await h.create([
      { input, metadata: { batch_idx: 7 }, config: { local: { command: ["node", agent], env_map: envMap } } },
      {
        input: { ...input, out: join(h.dir, "env-val.json") },
        is_train: false,
        config: { local: { command: ["node", agent], env_map: { OUT: "input.out" } } },
      },
    ]);
    h.controller().start();
    const done = await h.waitTerminal([train!.rollout_id, val!.rollout_id]);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded"]);

    const env = JSON.parse(readFileSync(input.out, "utf8")) as Record<string, string>;
    const rid = train!.rollout_id;
    expect(env.AGL_OPENAI_BASE_URL).toBe(`${h.gateway.url}/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1`);
    expect(env.AGL_EVENT_URL).toBe(`${h.gateway.url}/api/rollouts/${rid}/attempt/0/events`);
    // AGL_* always win over env_map; the agent gets a token for its own attempt, never the admin key.
    const token = verifyAgentToken("test-key", env.AGL_KEY!, Date.now() / 1000);
    expect(token).toMatchObject({ claims: { rollout_id: rid, attempt_id: "0", mode: "train" } });
    expect(env.AGL_ROLLOUT_ID).toBe(rid);
    expect(env.AGL_ATTEMPT_ID).toBe("0");
    // What an SDK client built with no arguments reads.
    expect(env.OPENAI_BASE_URL).toBe(env.AGL_OPENAI_BASE_URL);
    expect(env.OPENAI_API_KEY).toBe(env.AGL_KEY);
    expect(env.ANTHROPIC_BASE_URL).toBe(`${h.gateway.url}/proxy/rollout/${rid}/attempt/0/mode/train/anthropic`);
    expect(env.ANTHROPIC_API_KEY).toBe(env.AGL_KEY);
    expect(env.QUESTION).toBe("what is 6*7?"); // strings as-is, no JSON quotes
    expect(JSON.parse(env.META!)).toEqual({ tags: ["a", "b"], level: 2 });
    expect(env.COUNT).toBe("42");
    expect(env.FLAG).toBe("true");
    expect(env.NOTHING).toBe("null");
    expect(env.SECOND).toBe("second");
    expect(env.BATCH).toBe("7");
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.HOME).toBeUndefined(); // only what the controller's baseEnv passes on

    const valEnv = JSON.parse(readFileSync(join(h.dir, "env-val.json"), "utf8")) as Record<string, string>;
    expect(valEnv.AGL_OPENAI_BASE_URL).toBe(
      `${h.gateway.url}/proxy/rollout/${val!.rollout_id}/attempt/0/mode/val/openai/v1`,
    );
    expect(verifyAgentToken("test-key", valEnv.AGL_KEY!, Date.now() / 1000)).toMatchObject({ claims: { mode: "val" } });
  });

  it("fails a rollout whose env_map path is missing, naming the path, without starting a process", async () => {
    const marker = join(h.dir, "started");
    const command = ["sh", "-c", `touch ${marker}`];
    const [missingLeaf, missingInArray, throughString] = await h.create([
      { input: { question: {} }, config: { local: { command, env_map: { Q: "input.question.text" } } } },
      { input: { items: [1] }, config: { local: { command, env_map: { ITEM: "input.items.3" } } } },
      { input: { question: "plain" }, config: { local: { command, env_map: { Q: "input.question.text" } } } },
    ]);
    h.controller().start();
    const done = await h.waitTerminal([missingLeaf!.rollout_id, missingInArray!.rollout_id, throughString!.rollout_id]);
    expect(done.map((r) => r.status.state)).toEqual(["failed", "failed", "failed"]);
    expect(done[0]!.status.error_message).toBe(
      `env_map Q: path input.question.text not found in rollout ${missingLeaf!.rollout_id}`,
    );
    expect(done[1]!.status.error_message).toContain("env_map ITEM: path input.items.3 not found");
    expect(done[2]!.status.error_message).toContain("path input.question.text not found");
    expect(existsSync(marker)).toBe(false);
  });

  it("fails a rollout that names neither a command nor an agent_class", async () => {
    const [rollout] = await h.create([{ input: {} }]);
    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.error_message).toMatch(/no config\.local\.command or config\.local\.agent_class/);
  });

  it("uses the controller's local config for rollouts that carry none", async () => {
    const [rollout] = await h.create([{ input: { code: 4 } }]);
    h.controller({ local: { command: ["sh", "-c", "exit $CODE"], env_map: { CODE: "input.code" } } }).start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.error_message).toBe("exited with code 4");
  });
});

describe("agent_class", () => {
  it("runs a class's run() and a plain function export, and fails a missing export with its name", async () => {
    h.script(
      "agents.mjs",
      [
        "import { writeFileSync } from 'node:fs';",
        "export class Solver {",
        "  async run() { writeFileSync(process.env.OUT, 'class ran ' + process.env.AGL_ROLLOUT_ID); }",
        "}",
        "export async function solve() { writeFileSync(process.env.OUT, 'function ran'); }",
        "export default class { run() { throw new Error('default agent broke'); } }",
      ].join("\n"),
    );
    const local = (agentClass: string) => ({
      local: { agent_class: agentClass, env_map: { OUT: "input.out" } },
    });
    const [cls, fn, missing, dflt] = await h.create([
      { input: { out: join(h.dir, "class.txt") }, config: local("agents.mjs:Solver") },
      { input: { out: join(h.dir, "fn.txt") }, config: local("agents.mjs:solve") },
      { input: { out: join(h.dir, "x.txt") }, config: local("agents.mjs:Nope") },
      { input: { out: join(h.dir, "d.txt") }, config: local("agents.mjs") },
    ]);
    h.controller().start();
    const ids = [cls!, fn!, missing!, dflt!].map((r) => r.rollout_id);
    const done = await h.waitTerminal(ids);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded", "failed", "failed"]);
    expect(readFileSync(join(h.dir, "class.txt"), "utf8")).toBe(`class ran ${cls!.rollout_id}`);
    expect(readFileSync(join(h.dir, "fn.txt"), "utf8")).toBe("function ran");
    expect(done[2]!.status.error_message).toBe("exited with code 2");
    const missingLog = await h.client.getEvents(missing!.rollout_id, { eventType: "log" });
    expect((missingLog[0]!.data as { text: string }).text).toContain("has no class or function export named Nope");
    const defaultLog = await h.client.getEvents(dflt!.rollout_id, { eventType: "log" });
    expect((defaultLog[0]!.data as { text: string }).text).toContain("default agent broke");
  });
});
