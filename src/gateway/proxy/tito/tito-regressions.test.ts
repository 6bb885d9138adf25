/**
 * @module Regression cases of multi-turn token fidelity, each from a class of public bug reports (verl, prime-rl,
 * AReaL, rLLM, slime, ART): the agent's history handling or the chat template breaks "each prompt extends the last".
 * Each case runs the same agent twice against a fake vLLM that tokenises with the repository's real byte-level BPE
 * tokenizer and a Qwen-style chat template: once through `passthrough` (the split it causes today) and once through
 * `tito`, whose calls must aggregate into one trajectory row built from exactly the ids the upstream received. Two
 * cases are real history edits (tools changed, a turn dropped): there `tito` must render the conversation whole.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { trajectoryRows } from "../../../../test/support/tito-rows.js";
import type { ProxyModelMode } from "../../../protocol/index.js";
import { readTokenizerFolder } from "../../../wire/tokenizer-folder.js";
import { agentCall } from "../../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../../testing/proxy-harness.js";
import { TokenVllm } from "./testing/token-vllm.js";
import { QWEN2_TOKENIZER_DIR, qwen3TokenizerDir } from "./testing/tokenizer-fixture.js";

type Json = Record<string, unknown>;
/** The agent: its next chat body from the answers so far, or null when it is done. */
type Agent = (answers: Json[]) => Json | null;

const TOOLS = [
  {
    type: "function",
    function: { name: "calc", description: "evaluates", parameters: { type: "object", properties: {} } },
  },
];
const toolCall = (expr: string) =>
  `<tool_call>\n{"name": "calc", "arguments": {"expression": "${expr}"}}\n</tool_call>`;
const user = (content: string): Json => ({ role: "user", content });
const toolResult = (answer: Json, index: number, content: string): Json => ({
  role: "tool",
  tool_call_id: (answer.tool_calls as Json[])[index]!.id,
  content,
});
/** The assistant message as a framework sends it back: tool-call arguments re-serialised without spaces. */
const compactArgs = (answer: Json): Json => ({
  ...answer,
  tool_calls: (answer.tool_calls as Json[]).map((c) => {
    const fn = c.function as Json;
    return { ...c, function: { ...fn, arguments: JSON.stringify(JSON.parse(fn.arguments as string)) } };
  }),
});

const harnesses: ProxyHarness[] = [];
const fakes: TokenVllm[] = [];
afterEach(async () => {
  await Promise.all([...harnesses.splice(0).map((h) => h.close()), ...fakes.splice(0).map((f) => f.close())]);
});

/** Runs an agent through one proxy mode; returns the rows, the `tito` records and the prompts the upstream got. */
async function run(mode: ProxyModelMode, dir: string, outputs: (string | string[])[], agent: Agent) {
  const fake = await TokenVllm.start(dir, () => outputs[fake.received.length - 1] ?? "Done.");
  fakes.push(fake);
  const tito = mode === "tito" ? { mode, tokenizer: dir } : {};
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url, ...tito }] });
  harnesses.push(h);
  const rolloutId = await h.newRollout();
  const answers: Json[] = [];
  for (let body = agent(answers); body !== null; body = agent(answers)) {
    const res = await agentCall(h, rolloutId, "chat/completions", { model: "m", tools: TOOLS, ...body });
    expect(res.status, res.text).toBe(200);
    answers.push((res.json as { choices: { message: Json }[] }).choices[0]!.message);
  }
  const events = await h.store.listEvents(rolloutId, { eventType: "model_request" });
  return {
    ...(await trajectoryRows(h.store, rolloutId)),
    records: events.map((e) => (e.data as Json).tito as Json),
    sent: fake.received.map((c) => c.promptIds),
    responses: events.map((e) => ((e.data as Json).response as { choices: { token_ids: number[] }[] }).choices[0]!),
  };
}

/** The last row's tokens, prompt ⧺ response region. */
const rowTokens = (row: { promptTokenIds: number[]; responseTokenIds: number[] }) => [
  ...row.promptTokenIds,
  ...row.responseTokenIds,
];

/** `tito` made one row whose ids are exactly the upstream's: first prompt, and last prompt + last response. */
function expectOneExactRow(result: Awaited<ReturnType<typeof run>>): void {
  expect(result.mismatches).toEqual([]);
  expect(result.rows).toHaveLength(1);
  const row = result.rows[0]!;
  expect(row.promptTokenIds).toEqual(result.sent[0]);
  const last = result.sent.length - 1;
  expect(rowTokens(row)).toEqual([...result.sent[last]!, ...result.responses[last]!.token_ids]);
  expect(result.records.slice(1).map((r) => r.path)).toEqual(result.records.slice(1).map(() => "prefix"));
}

/** A Qwen2-style folder whose template tests `content is not none` (null and "" render differently). */
function notNoneTemplateDir(): string {
  const dir = qwen3TokenizerDir();
  const config = JSON.parse(readFileSync(join(QWEN2_TOKENIZER_DIR, "tokenizer_config.json"), "utf8"));
  const template = (config.chat_template as string).replace(
    "{%- if message.content %}",
    "{%- if message.content is not none %}",
  );
  expect(template).not.toBe(config.chat_template);
  writeFileSync(join(dir, "chat_template.jinja"), template);
  return dir;
}

describe("multi-turn regressions: passthrough splits, tito keeps one row with the upstream's ids", () => {
  it('re-serialised tool arguments ({"a": 1} sent back as {"a":1}, AI SDK / LangChain)', async () => {
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("What is 2+3?")] }
        : a.length === 1
          ? { messages: [user("What is 2+3?"), compactArgs(a[0]!), toolResult(a[0]!, 0, "5")] }
          : null;
    const outputs = [toolCall("2+3"), "It is 5."];
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    expectOneExactRow(await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent));
  });

  it('content null sent back as "" (LangChain) under a template that tests `is not none`', async () => {
    const dir = notNoneTemplateDir();
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("What is 2+3?")] }
        : a.length === 1
          ? { messages: [user("What is 2+3?"), { ...a[0]!, content: "" }, toolResult(a[0]!, 0, "5")] }
          : null;
    const outputs = [toolCall("2+3"), "It is 5."];
    const passthrough = await run("passthrough", dir, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    const tito = await run("tito", dir, outputs, agent);
    expectOneExactRow(tito);
  });

  it("newline at the end of a turn: trimmed by the framework, and the template's newline after <|im_end|> is mask 0", async () => {
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("What is 2+3?")] }
        : a.length === 1
          ? {
              messages: [
                user("What is 2+3?"),
                { role: "assistant", content: (a[0]!.content as string).trim() },
                user("Sure?"),
              ],
            }
          : null;
    const outputs = ["It is 5.\n", "Yes."];
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    const tito = await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent);
    expectOneExactRow(tito);
    const tokenizer = readTokenizerFolder(QWEN2_TOKENIZER_DIR);
    const row = tito.rows[0]!;
    const firstResponse = tito.responses[0]!.token_ids;
    expect(firstResponse.at(-1)).toBe(tokenizer.endOfTurn.id);
    // The id after the first response is the template's "\n": context, not trained.
    const after = firstResponse.length;
    expect(tokenizer.tokenizer.decode([row.responseTokenIds[after]!], false)).toBe("\n");
    expect(row.lossMask.slice(0, after + 1)).toEqual([...firstResponse.map(() => 1), 0]);
  });

  it("think blocks stripped from history by a Qwen3-style template once a new user turn follows", async () => {
    const dir = qwen3TokenizerDir();
    const agent: Agent = (a) => {
      const history = [user("What is 2+3?"), a[0], a[0] && toolResult(a[0], 0, "5"), a[1]].filter(Boolean) as Json[];
      if (a.length === 0) return { messages: history };
      if (a.length === 1) return { messages: history };
      if (a.length === 2) return { messages: [...history, user("And 3+3?")] };
      return null;
    };
    const outputs = [
      `<think>\nAdd them.\n</think>\n\n${toolCall("2+3")}`,
      "<think>\nDone.\n</think>\n\nIt is 5.",
      "6.",
    ];
    const passthrough = await run("passthrough", dir, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    expect(passthrough.mismatches.map((m) => m.turn)).toEqual([2]);
    expectOneExactRow(await run("tito", dir, outputs, agent));
  });

  it("a word whose ids change when text follows (sampled as two pieces, re-tokenised as one)", async () => {
    const { tokenizer } = readTokenizerFolder(QWEN2_TOKENIZER_DIR);
    const pieces = ["It is fi", "ve"];
    // Guard: the pieces' ids differ from the whole word's, so the case really exercises BPE instability.
    expect(pieces.flatMap((p) => tokenizer.encode(p))).not.toEqual(tokenizer.encode(pieces.join("")));
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("What is 2+3?")] }
        : a.length === 1
          ? { messages: [user("What is 2+3?"), a[0]!, user("Sure?")] }
          : null;
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, [pieces, "Yes."], agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    expectOneExactRow(await run("tito", QWEN2_TOKENIZER_DIR, [pieces, "Yes."], agent));
  });

  it("parallel tool calls answered in one user turn (arguments re-serialised)", async () => {
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("2+3 and 4+4?")] }
        : a.length === 1
          ? {
              messages: [
                user("2+3 and 4+4?"),
                compactArgs(a[0]!),
                toolResult(a[0]!, 0, "5"),
                toolResult(a[0]!, 1, "8"),
              ],
            }
          : null;
    const outputs = [`${toolCall("2+3")}\n${toolCall("4+4")}`, "5 and 8."];
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    const tito = await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent);
    expectOneExactRow(tito);
    const { tokenizer } = readTokenizerFolder(QWEN2_TOKENIZER_DIR);
    const observation = tokenizer.decode(tito.sent[1]!.slice(tito.records[1]!.prefix_end as number), false);
    expect(observation).toBe(
      "\n<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n8\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n",
    );
  });

  it("sequential tool turns regrouped into one assistant message with several calls (Mastra)", async () => {
    const agent: Agent = (a) => {
      if (a.length === 0) return { messages: [user("Add twice.")] };
      if (a.length === 1) return { messages: [user("Add twice."), a[0]!, toolResult(a[0]!, 0, "5")] };
      if (a.length > 2) return null;
      const calls = [...(a[0]!.tool_calls as Json[]), ...(a[1]!.tool_calls as Json[])];
      const grouped = { role: "assistant", content: null, tool_calls: calls };
      const results = [toolResult(a[0]!, 0, "5"), toolResult(a[1]!, 0, "8")];
      return { messages: [user("Add twice."), grouped, ...results] };
    };
    const outputs = [toolCall("2+3"), toolCall("4+4"), "Done."];
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThan(1);
    const tito = await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent);
    expectOneExactRow(tito);
    expect(tito.records[2]).toMatchObject({ path: "prefix", regrouped: true });
  });

  it("tools changed mid-rollout: tito does not reuse the prefix (the system turn changed) and renders it whole", async () => {
    const more = [...TOOLS, { type: "function", function: { name: "search", parameters: { type: "object" } } }];
    const agent: Agent = (a) =>
      a.length === 0
        ? { messages: [user("What is 2+3?")] }
        : a.length === 1
          ? { messages: [user("What is 2+3?"), a[0]!, toolResult(a[0]!, 0, "5")], tools: more }
          : null;
    const outputs = [toolCall("2+3"), "It is 5."];
    const tito = await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(tito.records[1]).toMatchObject({ path: "full", prefix_end: 0, reason: "no_match" });
    expect(tito.rows).toHaveLength(2);
    expect(tito.rows.map((r) => r.promptTokenIds)).toEqual(tito.sent);
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows).toHaveLength(2);
  });

  it("the agent drops a middle turn: tito renders the edited history whole; earlier turns stay one row", async () => {
    const agent: Agent = (a) => {
      if (a.length === 0) return { messages: [user("Add twice.")] };
      const first = [user("Add twice."), a[0]!, toolResult(a[0]!, 0, "5")];
      if (a.length === 1) return { messages: first };
      if (a.length === 2) return { messages: [user("Add twice."), a[1]!, toolResult(a[1]!, 0, "8")] };
      return null;
    };
    const outputs = [toolCall("2+3"), toolCall("4+4"), "Done."];
    const tito = await run("tito", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(tito.records.map((r) => r.path)).toEqual(["full", "prefix", "full"]);
    expect(tito.rows).toHaveLength(2);
    expect(tito.rows[1]!.promptTokenIds).toEqual(tito.sent[2]);
    const passthrough = await run("passthrough", QWEN2_TOKENIZER_DIR, outputs, agent);
    expect(passthrough.rows.length).toBeGreaterThanOrEqual(2);
  });
});
