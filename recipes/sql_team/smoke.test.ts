/**
 * sql-team through the real stack. (1) A gateway routing the checker to a `frozen` model, a local controller running
 * the recipe's agent (LangGraph.js, one process per rollout), and two fake vLLM servers scripted to answer each role:
 * rewards, agent names, which model served which role, and the rows the trainer builds from the recipe's config.
 * (2) `arclight train` on the recipe's CPU config (embedded engine, frozen checker snapshot), one short step: the
 * frozen weights' hash is unchanged and only writer and rewriter calls became rows.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ControllerConfigSchema } from "../../src/controller/config.js";
import { LocalController } from "../../src/controller/reconcile.js";
import { GatewayClient } from "../../src/gateway/client.js";
import { FakeVllm } from "../../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../../src/gateway/testing/serve.js";
import { pollUntil } from "../../src/testing/poll.js";
import { tempDir } from "../../src/testing/temp-dir.js";
import { assembleBatch, batchOptionsFromConfig } from "../../src/trainer/batch.js";
import { parseTrainerConfig } from "../../src/trainer/config.js";
import type { SqlExample } from "./spider-data.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = join(HERE, "../..");
const TSX = import.meta.resolve("tsx");
const exec = promisify(execFile);

const EXAMPLES = readFileSync(join(HERE, "data/val.jsonl"), "utf8")
  .trim()
  .split("\n")
  .slice(0, 6)
  .map((line) => JSON.parse(line) as SqlExample);
const GOLD = new Map(EXAMPLES.map((e) => [e.question, e.query]));
/** The writer drafts SQL that fails here; the rewriter fixes it after the checker's review. */
const FIXED = EXAMPLES[4]!.question;
const FAILING_SQL = "SELECT nope FROM flight";
/** Writer and rewriter are wrong every time here (a query that runs, with another result): the reward is 0. */
const WRONG = EXAMPLES[5]!.question;
const WRONG_SQL = "SELECT count(*) FROM flight WHERE 1 = 0";

const field = (prompt: string, name: string) => new RegExp(`${name}:\\s*(.*?)(\\n\\n|$)`, "s").exec(prompt)?.[1] ?? "";
const promptOf = (body: Record<string, unknown>) =>
  String((body.messages as { content: string }[] | undefined)?.at(-1)?.content ?? "");

/** The scripted team: right SQL except where {@link FIXED} / {@link WRONG} say; the checker compares with the gold. */
function answer(body: Record<string, unknown>): { content: string } {
  const prompt = promptOf(body);
  const question = field(prompt, "Question");
  const gold = GOLD.get(question);
  if (gold === undefined) return { content: "unknown question" };
  if (prompt.startsWith("Check")) {
    const verdict = field(prompt, "Query") === gold ? "THE QUERY IS CORRECT." : "THE QUERY IS INCORRECT.";
    return { content: `Compared with what the question asks.\n${verdict}` };
  }
  const sql = question === WRONG ? WRONG_SQL : question === FIXED && prompt.startsWith("Write") ? FAILING_SQL : gold;
  return { content: `Here it is:\n\`\`\`sql\n${sql};\n\`\`\`` };
}

interface CallData {
  agent_name: string;
  model: string;
}

describe("sql-team through gateway and controller with a scripted team", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it("scores by execution, names each role's calls, serves the checker frozen and trains writer and rewriter only", async () => {
    const policy = await FakeVllm.start({ decide: answer });
    const frozen = await FakeVllm.start({ decide: answer });
    closers.push(
      () => policy.close(),
      () => frozen.close(),
    );
    const gateway: TestGateway = await startTestGateway({ key: "test-key", agent_routes: { checker: "frozen" } });
    closers.push(() => gateway.close());
    const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
    closers.push(() => client.close());
    await client.upsertModels([
      { model: "policy", endpoint: policy.url, version: 0 },
      { model: "frozen", endpoint: frozen.url, version: 0 },
    ]);
    const yaml = parseYaml(readFileSync(join(HERE, "train.cpu.yaml"), "utf8")) as { controller: { env_map: object } };
    const dir = tempDir("sql-team-smoke-");
    const controller = new LocalController({
      client,
      config: ControllerConfigSchema.parse({
        gateway_url: gateway.url,
        key: "test-key",
        poll_interval_seconds: 0.05,
        spawn_rate_per_second: 1000,
        state_file: join(dir, "controller-state.json"),
        cwd: ROOT,
        pool_size: 6,
        local: {
          command: ["node", "--import", TSX, join(HERE, "agent.ts"), join(HERE, "data/tables.json")],
          env_map: yaml.controller.env_map,
        },
      }),
      logger: pino({ level: "silent" }),
      baseEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin", SQL_MAX_TURNS: "2" },
    });
    closers.push(() => controller.shutdown(2000));
    const created = await client.createRollouts(
      EXAMPLES.map((input, i) => ({ input: { ...input, data_id: `q${i}` } })),
    );
    const ids = created.map((r) => r.rollout_id);
    const started = performance.now();
    controller.start();
    const done = await pollUntil(
      "sql-team rollouts",
      async () => {
        const rollouts = await Promise.all(ids.map(async (id) => (await client.getRollout(id)).rollout));
        return rollouts.every((r) => r.status.state === "succeeded" || r.status.state === "failed")
          ? rollouts
          : undefined;
      },
      180_000,
      100,
    );
    const elapsedS = (performance.now() - started) / 1000;
    expect(done.map((r) => r.status.state)).toEqual(EXAMPLES.map(() => "succeeded"));

    // 1. Rewards: execution accuracy of the final query.
    const rewards = await Promise.all(
      ids.map(async (id) => (await client.getEvents(id, { eventType: "reward" })).map((e) => e.data.value)),
    );
    expect(rewards).toEqual([[1], [1], [1], [1], [1], [0]]);
    const infos = await Promise.all(
      ids.map(async (id) => (await client.getEvents(id, { eventType: "sql_team" }))[0]!.data),
    );
    expect(infos[4]).toMatchObject({ draft_reward: 0, rewrites: 1, verdict: "correct" });
    expect(infos[5]).toMatchObject({ draft_reward: 0, rewrites: 2, verdict: "incorrect", query: WRONG_SQL });

    // Each execution is a tool span; the failing draft's ends with status error.
    const executions = await Promise.all(
      ids.map(async (id) =>
        (await client.getEvents(id, { eventType: "span" }))
          .map((e) => e.data as { name: string; status: { code: string } })
          .filter((span) => span.name === "execute_tool execute_sql")
          .map((span) => span.status.code),
      ),
    );
    expect(executions.map((list) => list.length)).toEqual([1, 1, 1, 1, 2, 3]);
    expect(executions[4]).toEqual(["error", "unset"]);
    expect(executions[5]).not.toContain("error");

    // 2. Each call names its role; the checker's went to the frozen model, the others to the policy.
    const calls = await Promise.all(
      ids.map(async (id) =>
        (await client.getEvents(id, { eventType: "model_request" })).map((e) => e.data as unknown as CallData),
      ),
    );
    const roles = calls.map((list) => list.map((c) => c.agent_name));
    expect(roles.slice(0, 4)).toEqual(Array(4).fill(["writer", "checker"]));
    expect(roles[4]).toEqual(["writer", "checker", "rewriter", "checker"]);
    expect(roles[5]).toEqual(["writer", "checker", "rewriter", "checker", "rewriter", "checker"]);
    const servedBy = new Set(calls.flat().map((c) => `${c.agent_name}:${c.model}`));
    expect([...servedBy].sort()).toEqual(["checker:frozen", "rewriter:policy", "writer:policy"]);
    expect(frozen.received.every((call) => promptOf(call.body).startsWith("Check"))).toBe(true);
    expect(policy.received.some((call) => promptOf(call.body).startsWith("Check"))).toBe(false);

    // 3. The recipe's config makes rows of the writer's and rewriter's calls only: 6 writer and 3 rewriter calls of the 18.
    const config = parseTrainerConfig(parseYaml(readFileSync(join(HERE, "train.cpu.yaml"), "utf8")));
    const records = await Promise.all(
      ids.map(async (id, i) => ({ rolloutId: id, dataId: `q${i}`, events: await client.getTripletEvents(id) })),
    );
    const batch = assembleBatch(records, batchOptionsFromConfig(config));
    expect(calls.flat()).toHaveLength(18);
    expect(batch.counts.rows).toBe(9);
    const checkerPrompts = new Set(
      records.flatMap((r) =>
        r.events
          .filter(
            (e) => e.event_type === "model_request" && (e.data as { agent_name?: string }).agent_name === "checker",
          )
          .map((e) => JSON.stringify((e.data as { prompt_token_ids: number[] }).prompt_token_ids)),
      ),
    );
    expect(checkerPrompts.size).toBeGreaterThan(0);
    expect(batch.rows.some((row) => checkerPrompts.has(JSON.stringify(row.promptTokenIds)))).toBe(false);
    console.log(`sql-team smoke: ${ids.length} rollouts in ${elapsedS.toFixed(1)} s, ${batch.counts.rows} rows`);
  }, 240_000);
});

describe("sql-team under arclight train", () => {
  it("keeps the frozen checker's weights bit-identical while the writer and rewriter train", async () => {
    const dir = tempDir("sql-team-train-");
    // The recipe's YAML with a short budget (1 step of 1 group of 2 rollouts) and absolute paths.
    const yaml = readFileSync(join(HERE, "train.cpu.yaml"), "utf8")
      .replace(/^name: .*$/m, "name: sqlt")
      .replace(/^total_steps: .*$/m, "total_steps: 1")
      .replace(/^train_batch_size: .*$/m, "train_batch_size: 1")
      .replace(/^n: .*$/m, "n: 2")
      .replace(/^ {2}val_path: .*$/m, "  val_path: null")
      .replace("train_path: data/", `train_path: ${join(HERE, "data")}/`)
      .replace(
        "[node, --import, tsx, agent.ts, data/tables.json]",
        JSON.stringify(["node", "--import", TSX, join(HERE, "agent.ts"), join(HERE, "data/tables.json")]),
      );
    writeFileSync(join(dir, "train.yaml"), yaml);
    const { stdout } = await exec(
      process.execPath,
      ["--import", TSX, join(ROOT, "src/cli/main.ts"), "train", "train.yaml", "--preset", "agent"],
      { cwd: dir, timeout: 280_000, env: { ...process.env, SQL_MAX_TOKENS: "12", SQL_MAX_TURNS: "1" } },
    );
    expect(stdout).toContain("1 steps, policy version 1");
    const runDir = join(dir, "runs", "sqlt");

    const frozen = JSON.parse(readFileSync(join(runDir, "frozen.json"), "utf8")) as Record<string, string>;
    expect(frozen.model).toBe("frozen");
    expect(frozen.end_sha256).toBe(frozen.start_sha256);

    const db = new Database(join(runDir, "gateway.db"), { readonly: true });
    const calls = db
      .prepare("SELECT data FROM events WHERE event_type = 'model_request'")
      .all()
      .map((row) => JSON.parse((row as { data: string }).data) as CallData);
    db.close();
    const servedBy = new Set(calls.map((c) => `${c.agent_name}:${c.model}`));
    expect([...servedBy].sort()).toEqual(["checker:frozen", "rewriter:policy", "writer:policy"]);
    const metrics = JSON.parse(readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim()) as Record<string, number>;
    expect(metrics.rollouts).toBe(2);
    expect(metrics.rows).toBe(calls.filter((c) => c.agent_name !== "checker").length);
  }, 300_000);
});
