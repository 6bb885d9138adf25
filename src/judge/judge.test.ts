/** The judge against a scripted OpenAI-compatible judge server on loopback: prompts, parsing, retries, failures. */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_RUBRIC } from "./config.js";
import { Judge, type JudgeSettings } from "./judge.js";
import { parseRanking, parseScore, rankRewards } from "./parse.js";
import { groupMessages, pointwiseMessages } from "./prompts.js";

/** One scripted answer: a chat reply's content (or refusal), a status with a body, a raw body, or a stall. */
type Script =
  | { content: string }
  | { refusal: string }
  | { status: number; body?: string }
  | { raw: string }
  | { stallMs: number; content: string };

interface ScriptedJudge {
  url: string;
  requests: { body: { messages: { role: string; content: string }[]; model: string } }[];
  server: Server;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function chatBody(message: Record<string, unknown>): string {
  return JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model: "judge",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: "stop", logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
}

/** A judge server answering each `POST /v1/chat/completions` with the next script entry (the last one repeats). */
async function scriptedJudge(scripts: Script[]): Promise<ScriptedJudge> {
  const judge: Omit<ScriptedJudge, "url" | "server"> = { requests: [] };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const script = scripts[Math.min(judge.requests.length, scripts.length - 1)] as Script;
    judge.requests.push({ body: JSON.parse(text) });
    const send = (status: number, body: string) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(body);
    };
    if ("stallMs" in script) {
      setTimeout(() => !res.destroyed && send(200, chatBody({ content: script.content })), script.stallMs);
    } else if ("status" in script) send(script.status, script.body ?? '{"error":{"message":"boom"}}');
    else if ("raw" in script) send(200, script.raw);
    else if ("refusal" in script) send(200, chatBody({ content: null, refusal: script.refusal }));
    else send(200, chatBody({ content: script.content }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  servers.push(server);
  const { port } = server.address() as { port: number };
  return { ...judge, server, url: `http://127.0.0.1:${port}/v1` } as ScriptedJudge;
}

function settings(url: string, overrides: Partial<JudgeSettings> = {}): JudgeSettings {
  return {
    base_url: url,
    model: "judge",
    apiKey: "",
    mode: "pointwise",
    rubric: DEFAULT_RUBRIC,
    task_field: "question",
    min_score: 0,
    max_score: 10,
    weight: 1,
    combine: "add",
    temperature: 0,
    max_tokens: 64,
    timeout_seconds: 5,
    max_attempts: 3,
    ...overrides,
  };
}

describe("judge prompts", () => {
  it("pointwise: the rubric, the task, the answer and the score range, verdict last", () => {
    const [system, user] = pointwiseMessages("Be exact.", "What is 2+2?", "4", 1, 5);
    expect(system?.role).toBe("system");
    const text = user?.content as string;
    expect(text).toContain("Rubric:\nBe exact.");
    expect(text).toContain("<task>\nWhat is 2+2?\n</task>");
    expect(text).toContain("<answer>\n4\n</answer>");
    expect(text).toMatch(/from 1 \(worst\) to 5 \(best\) on the last line, exactly as: SCORE: <number>$/);
  });

  it("group: every answer under its own label and a ranking of all labels asked for", () => {
    const text = groupMessages("Be exact.", "Q", ["x", "y", "z"])[1]?.content as string;
    expect(text).toContain('<answer label="A">\nx\n</answer>\n<answer label="B">\ny\n</answer>');
    expect(text).toContain("RANKING: A > B > C");
    expect(text).toContain("3 answers to the same task");
  });
});

describe("parseScore", () => {
  it("reads the last SCORE line, plain, emphasised or as a fraction", () => {
    expect(parseScore("Looks right.\nSCORE: 7", 0, 10)).toEqual({ ok: true, value: 7 });
    expect(parseScore("Fine.\n**Score:** 8.5/10", 0, 10)).toEqual({ ok: true, value: 8.5 });
    expect(parseScore("SCORE: 2\nOn reflection...\nscore: 3", 0, 10)).toEqual({ ok: true, value: 3 });
  });

  it("refuses a malformed, out-of-range or missing score (a refusal has none)", () => {
    expect(parseScore("SCORE: seven", 0, 10)).toEqual({ ok: false, problem: 'SCORE: "seven" is not a number' });
    expect(parseScore("SCORE: 11", 0, 10)).toEqual({ ok: false, problem: "score 11 outside 0..10" });
    expect(parseScore("I'm sorry, I can't help with grading this.", 0, 10)).toEqual({
      ok: false,
      problem: "no SCORE: line in the reply",
    });
  });
});

describe("parseRanking and rankRewards", () => {
  it("reads a full ranking, best first", () => {
    expect(parseRanking("B is best.\nRANKING: B > C > A", 3)).toEqual({ ok: true, value: [1, 2, 0] });
    expect(parseRanking("ranking: [b], [a]", 2)).toEqual({ ok: true, value: [1, 0] });
  });

  it("refuses unknown, repeated or missing labels", () => {
    expect(parseRanking("RANKING: B > D > A", 3)).toEqual({ ok: false, problem: 'unknown label "D" in the ranking' });
    expect(parseRanking("RANKING: B > B > A", 3)).toEqual({ ok: false, problem: "label B ranked twice" });
    expect(parseRanking("RANKING: B > A", 3)).toEqual({ ok: false, problem: "the ranking leaves out C" });
    expect(parseRanking("They are all fine.", 3)).toEqual({ ok: false, problem: "no RANKING: line in the reply" });
  });

  it("spaces rewards evenly from 1 (best) to 0 (worst), in answer order", () => {
    expect(rankRewards([1, 2, 0])).toEqual([0, 1, 0.5]);
    expect(rankRewards([0])).toEqual([1]);
  });
});

describe("Judge against a scripted judge server", () => {
  it("scores an answer: (score - min) / (max - min), the prompt sent as built", async () => {
    const server = await scriptedJudge([{ content: "Correct.\nSCORE: 7" }]);
    const outcome = await new Judge(settings(server.url)).scoreAnswer("What is 2+2?", "4");
    expect(outcome).toMatchObject({ ok: true, rewards: [0.7], attempts: 1 });
    expect(server.requests[0]?.body.model).toBe("judge");
    expect(server.requests[0]?.body.messages).toEqual(pointwiseMessages(DEFAULT_RUBRIC, "What is 2+2?", "4", 0, 10));
  });

  it("retries a malformed reply, a 5xx and bad JSON, then scores", async () => {
    const server = await scriptedJudge([
      { content: "SCORE: great" },
      { status: 503 },
      { raw: "<html>not json" },
      { content: "SCORE: 10" },
    ]);
    const outcome = await new Judge(settings(server.url, { max_attempts: 4 })).scoreAnswer("t", "a");
    expect(outcome).toMatchObject({ ok: true, rewards: [1], attempts: 4 });
  });

  it("gives no reward, with the last problem, when every attempt fails", async () => {
    const outOfRange = await scriptedJudge([{ content: "SCORE: 12" }]);
    expect(await new Judge(settings(outOfRange.url)).scoreAnswer("t", "a")).toEqual({
      ok: false,
      problem: "score 12 outside 0..10",
      attempts: 3,
    });
    const failing = await scriptedJudge([{ status: 500 }]);
    expect(await new Judge(settings(failing.url, { max_attempts: 2 })).scoreAnswer("t", "a")).toEqual({
      ok: false,
      problem: "judge endpoint answered 500",
      attempts: 2,
    });
    expect(failing.requests).toHaveLength(2);
  });

  it("names a refusal and a timeout", async () => {
    const refusing = await scriptedJudge([{ refusal: "I cannot grade this." }]);
    expect(await new Judge(settings(refusing.url, { max_attempts: 1 })).scoreAnswer("t", "a")).toEqual({
      ok: false,
      problem: "judge refused (I cannot grade this.)",
      attempts: 1,
    });
    const stalling = await scriptedJudge([{ stallMs: 2_000, content: "SCORE: 5" }]);
    const outcome = await new Judge(settings(stalling.url, { max_attempts: 1, timeout_seconds: 0.2 })).scoreAnswer(
      "t",
      "a",
    );
    expect(outcome).toEqual({ ok: false, problem: "judge request timed out", attempts: 1 });
  });

  it("ranks a group and maps the ranks to rewards; retries a ranking that leaves an answer out", async () => {
    const server = await scriptedJudge([{ content: "RANKING: A > C" }, { content: "C is best.\nRANKING: C > A > B" }]);
    const outcome = await new Judge(settings(server.url, { mode: "group" })).rankAnswers("t", ["x", "y", "z"]);
    expect(outcome).toMatchObject({ ok: true, rewards: [0.5, 0, 1], attempts: 2 });
  });

  it("reports an endpoint nothing listens on", async () => {
    const server = await scriptedJudge([{ content: "SCORE: 1" }]);
    const url = server.url;
    server.server.close();
    server.server.closeAllConnections();
    const outcome = await new Judge(settings(url, { max_attempts: 1 })).scoreAnswer("t", "a");
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.problem).toMatch(/^judge endpoint unreachable/);
  });
});
