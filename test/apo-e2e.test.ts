/**
 * `arclight apo` end to end, as a user runs it: the CLI as a child process against a real gateway on loopback, with
 * its own real local controller starting the unchanged calculator agent (child processes) that receives each prompt
 * through the versioned resource (`CALC_SYSTEM_PROMPT`). The optimiser is a scripted OpenAI-compatible server
 * returning planned critiques and edits, some malformed (to exercise the retry and the bad-round report). The policy
 * the agents call is a deterministic scripted model whose answers depend only on the system prompt
 * (src/apo/testing/prompt-sensitive-policy.ts): the embedded tiny model cannot follow a prompt, so with it the scores
 * would be noise and no assertion about which prompts the beam keeps could hold.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { HistoryRecord } from "../src/apo/history.js";
import { CRITIQUE_MARK, EDIT_MARK } from "../src/apo/optimiser-messages.js";
import { type ChatAnswer, type ChatServer, startChatServer, systemText } from "../src/apo/testing/chat-server.js";
import { startPromptSensitivePolicy } from "../src/apo/testing/prompt-sensitive-policy.js";
import { calculatorAgentCommand, isDemoProblem } from "../src/demo/settings.js";
import { GatewayClient } from "../src/gateway/client.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { type ProcessResult, runProcess } from "../src/testing/run-process.js";
import { readJsonl } from "../src/trainer/data-order.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const DATA = fileURLToPath(new URL("../examples/calculator/data/", import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), "arclight-apo-test-"));

const SEED = "You are a calculator.";
const P1 = "Reply with one line ANSWER: <number>.";
const P2 = "Be friendly.";
const P3 = "Reply with one line ANSWER: <number>. Check the arithmetic first.";
const P4 = "Reply with one line ANSWER: <number>. Be quick.";
const prompts = (...p: string[]) => ({ content: JSON.stringify({ prompts: p }) });

/**
 * The optimiser's planned answers, in call order (expansions run one beam prompt at a time, so the order is fixed).
 * Each entry names the request it expects; a request of the other kind gets a 500, which the test would see.
 */
const PLAN: [typeof CRITIQUE_MARK | typeof EDIT_MARK, ChatAnswer][] = [
  // Round 1, beam [p0 seed]: a critique, an edit answer that is not JSON, then a valid retry.
  [CRITIQUE_MARK, { content: "The prompt never asks for an ANSWER: line." }],
  [EDIT_MARK, { content: "Here are two better prompts: 1. answer clearly 2. be nice" }],
  [EDIT_MARK, prompts(P1, P2)],
  // Round 2, beam [p1, p0]: p1 gets a good edit; p0's edits are duplicates, then the wrong count: bad output.
  [CRITIQUE_MARK, { content: "The answers are off by one: ask to check the arithmetic." }],
  [EDIT_MARK, prompts(P3, P4)],
  [CRITIQUE_MARK, { content: "The prompt never asks for an ANSWER: line." }],
  [EDIT_MARK, prompts(P1, P2)],
  [EDIT_MARK, prompts("Only one prompt.")],
  // Round 3, beam [p3, p1]: an empty critique twice, then edits that are never JSON: a bad round.
  [CRITIQUE_MARK, { content: "" }],
  [CRITIQUE_MARK, { content: "  " }],
  [CRITIQUE_MARK, { content: "Still off by one." }],
  [EDIT_MARK, { content: "no json" }],
  [EDIT_MARK, { content: "still no json" }],
];

let gateway: TestGateway;
let policy: ChatServer;
let optimiser: ChatServer;
let client: GatewayClient;
let result: ProcessResult;
let history: HistoryRecord[];

function cli(args: string[]): Promise<ProcessResult> {
  return runProcess([process.execPath, "--import", TSX, MAIN, ...args], {
    cwd: workDir,
    env: { PATH: process.env.PATH, ARCLIGHT_KEY: "test-key", OPT_KEY: "optimiser-key" },
  });
}

function writeInputs(name: string, items: unknown[]): void {
  writeFileSync(join(workDir, name), items.map((item) => `${JSON.stringify(item)}\n`).join(""));
}

beforeAll(async () => {
  const problems = readJsonl(join(DATA, "train.jsonl")).filter(isDemoProblem).slice(0, 12);
  const inputs = problems.map((p) => p.input as { question: string; answer: number });
  writeInputs("train.jsonl", inputs.slice(0, 8));
  writeInputs("val.jsonl", inputs.slice(8));
  policy = await startPromptSensitivePolicy(new Map(inputs.map((i) => [i.question, i.answer])));
  optimiser = await startChatServer((request, call) => {
    const [mark, answer] = PLAN[call] ?? [EDIT_MARK, { status: 500 }];
    return systemText(request).startsWith(mark) ? answer : { status: 500, body: { error: { message: "off plan" } } };
  });
  gateway = await startTestGateway({ key: "test-key", model_name: "policy" });
  client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
  await client.addResource("prompt", SEED);
  const config = {
    name: "calc-apo",
    gateway_url: gateway.url,
    prompt: { resource: "prompt", env: "CALC_SYSTEM_PROMPT" },
    data: { train_path: "train.jsonl", val_path: "val.jsonl" },
    agent: {
      command: calculatorAgentCommand(),
      env_map: { QUESTION: "input.question", ANSWER: "input.answer" },
      pool_size: 8,
    },
    rollout_timeout_seconds: 120,
    policy: { endpoint: policy.url },
    optimiser: { base_url: optimiser.url, model: "scripted-optimiser", api_key_env: "OPT_KEY", timeout_seconds: 30 },
    search: { rounds: 4, beam_width: 2, branch_factor: 2, minibatch_size: 2, gradient_examples: 2, patience: 1 },
  };
  writeFileSync(join(workDir, "apo.yaml"), stringify(config));
  result = await cli(["apo", "apo.yaml"]);
  const lines = readFileSync(join(workDir, "runs", "calc-apo", "history.jsonl"), "utf8")
    .trim()
    .split("\n");
  history = lines.map((line) => JSON.parse(line) as HistoryRecord);
}, 400_000);

afterAll(async () => {
  await client?.close();
  await gateway?.close();
  await policy?.close();
  await optimiser?.close();
  rmSync(workDir, { recursive: true, force: true });
});

const ofType = <T extends HistoryRecord["type"]>(type: T) =>
  history.filter((r): r is Extract<HistoryRecord, { type: T }> => r.type === type);

describe("arclight apo end to end", () => {
  it("exits 0 and prints a progress line per round, the bad outputs and the bad round", () => {
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toMatch(/round 1\/4: 2 candidates scored; best p1 0\.100 \(\+0\.100\)/);
    expect(result.stdout).toMatch(/round 2: optimiser edit for p0 rejected twice: attempt 1: prompt 1 repeats/);
    expect(result.stdout).toMatch(
      /round 3: optimiser critique for p3 rejected twice: attempt 1: the critique is empty/,
    );
    expect(result.stdout).toMatch(/round 3\/4: BAD ROUND: the optimiser gave no usable prompt/);
    expect(result.stdout).toContain("3 rounds (no gain for 1 round(s), 1 bad); val score 0.000 -> 1.000 (p3, round 2)");
  });

  it("scores every proposed prompt on the validation split with real agent rollouts", () => {
    const scored = ofType("prompt").map((p) => [p.id, p.prompt, p.val_score, p.parent_id]);
    expect(scored).toEqual([
      ["p0", SEED, 0, null],
      ["p1", P1, 0.1, "p0"],
      ["p2", P2, 0, "p0"],
      ["p3", P3, 1, "p1"],
      ["p4", P4, 0.1, "p1"],
    ]);
    for (const p of ofType("prompt")) expect(p.val_rewards).toHaveLength(4);
  });

  it("keeps the better prompts in the beam, and the older one on a tie", () => {
    const rounds = ofType("round").map((r) => [r.round, r.beam.map((b) => b.id), r.bad, r.candidates]);
    // Round 1: p1 (0.1) beats p0 and p2 (both 0); p0 stays ahead of p2 on the tie. Round 2: p3 (1.0), then p1 (0.1
    // ties p4, older). Round 3: nothing usable, the beam is unchanged.
    expect(rounds).toEqual([
      [1, ["p1", "p0"], false, 2],
      [2, ["p3", "p1"], false, 2],
      [3, ["p3", "p1"], true, 0],
    ]);
    expect(ofType("round").map((r) => r.gain)).toEqual([0.1, 0.9, 0]);
    for (const r of ofType("round")) expect(r.timings.round_s).toBeGreaterThan(0);
  });

  it("saves every critique, the traces behind it, and each rejected optimiser output with its problems", () => {
    const critiques = ofType("critique");
    expect(critiques.map((c) => [c.round, c.parent_id])).toEqual([
      [1, "p0"],
      [2, "p1"],
      [2, "p0"],
      [3, "p1"],
    ]);
    // The seed's traces: the agent's real answers (no ANSWER: line), reward 0.
    expect(critiques[0]!.traces).toHaveLength(2);
    expect(critiques[0]!.traces[0]!.output).toMatch(/^The result is -?\d+/);
    expect(critiques[0]!.traces[0]!.reward).toBe(0);
    const bad = ofType("bad_output").map((b) => [b.round, b.parent_id, b.stage, b.problems]);
    expect(bad).toEqual([
      [
        2,
        "p0",
        "edit",
        [
          "attempt 1: prompt 1 repeats an earlier or current prompt",
          "attempt 1: prompt 2 repeats an earlier or current prompt",
          "attempt 2: expected 2 prompts, got 1",
        ],
      ],
      [3, "p3", "critique", ["attempt 1: the critique is empty", "attempt 2: the critique is empty"]],
      [3, "p1", "edit", ["attempt 1: the answer is not valid JSON", "attempt 2: the answer is not valid JSON"]],
    ]);
    expect(ofType("proposals").map((p) => p.attempts)).toEqual([2, 1]);
    expect(optimiser.requests).toHaveLength(PLAN.length);
  });

  it("publishes the best prompt as the newest resource version and writes best-prompt.txt", async () => {
    // v1 the seed; p1..p4 stored as v2..v5 when proposed; the best published as v6.
    expect(ofType("prompt").map((p) => p.version)).toEqual([1, 2, 3, 4, 5]);
    expect(await client.getResource("prompt")).toMatchObject({ version: 6, value: P3 });
    expect(ofType("result")).toEqual([
      {
        type: "result",
        best_id: "p3",
        best_score: 1,
        initial_score: 0,
        rounds: 3,
        bad_rounds: 1,
        stop_reason: "patience",
        published_version: 6,
      },
    ]);
    expect(readFileSync(join(workDir, "runs", "calc-apo", "best-prompt.txt"), "utf8")).toBe(`${P3}\n`);
  });

  it("runs each rollout with the prompt version it scores, recorded on the attempt", async () => {
    const rollouts = await client.listAllRollouts();
    const p3Val = rollouts.filter((r) => (r.metadata as { apo_label?: string }).apo_label === "r2-p3-val");
    expect(p3Val).toHaveLength(4);
    for (const rollout of p3Val) {
      expect(rollout.metadata).toMatchObject({ resources: { prompt: 4 } });
      const events = await client.getEvents(rollout.rollout_id, { eventType: "resources" });
      expect(events.map((e) => e.data)).toEqual([{ versions: { prompt: 4 } }]);
    }
    // The agent really got P3 as its system message: the policy saw it.
    expect(policy.requests.filter((r) => systemText(r) === P3)).toHaveLength(4 + 2); // p3: 4 validation rollouts, then round 3's minibatch of 2
  });

  it("stops with exit 1 before asking the optimiser when the policy endpoint is down, naming policy.endpoint", async () => {
    // A gateway of its own: this one already routes the policy to the working scripted model.
    const other = await startTestGateway({ key: "test-key", model_name: "policy" });
    try {
      const before = optimiser.requests.length;
      const args = ["--set", "name=down", "--set", "prompt.initial=Be brief.", "--gateway-url", other.url];
      const down = await cli(["apo", "apo.yaml", ...args, "--policy-endpoint", "http://127.0.0.1:9/v1"]);
      expect(down.code, down.stderr + down.stdout).toBe(1);
      expect(down.stderr).toContain("every rollout of r0-p0-val failed (4 rollouts)");
      expect(down.stderr).toContain("check policy.endpoint (http://127.0.0.1:9/v1; --policy-endpoint)");
      expect(optimiser.requests.length).toBe(before);
    } finally {
      await other.close();
    }
  }, 200_000);

  it("exits 1 when every round is bad, and leaves the resource unchanged when the starting prompt stays best", async () => {
    // The optimiser's plan is used up: from here on it answers 500 to every request.
    const allBad = await cli(["apo", "apo.yaml", "--set", "name=all-bad", "--set", "search.rounds=1"]);
    expect(allBad.code, allBad.stderr + allBad.stdout).toBe(1);
    expect(allBad.stdout).toContain("1 round (all rounds run, 1 bad)");
    expect(allBad.stdout).toContain("the starting prompt stayed best: prompt left unchanged");
    expect(allBad.stderr).toContain("every round was bad: the optimiser gave no usable prompt");
    expect((await client.getResource("prompt")).version).toBe(6);
    const last = readFileSync(join(workDir, "runs", "all-bad", "history.jsonl"), "utf8")
      .trim()
      .split("\n")
      .at(-1);
    expect(JSON.parse(last as string)).toMatchObject({ type: "result", bad_rounds: 1, published_version: null });
  }, 200_000);

  it("refuses a config without a policy endpoint, naming the key", async () => {
    writeFileSync(join(workDir, "bad.yaml"), stringify({ name: "bad", prompt: { env: "X" } }));
    const bad = await cli(["apo", "bad.yaml"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("policy.endpoint: required");
    expect(bad.stderr).toContain("data.train_path: required");
  });
});
