/**
 * Runs agent.ts as a real child process against two real HTTP servers on 127.0.0.1: a fake model that answers in
 * vLLM's non-stream chat shape (Hermes tool calls, `token_ids`, `prompt_token_ids`; shapes copied from vLLM v0.19.0,
 * see the comment on `vllmCompletion`), and an event endpoint that records the reward post.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ByteTokenizer } from "../../src/engine/embedded/tokenizer.js";
import { type ProcessResult, runProcess } from "../../src/testing/run-process.js";
import { type ChatMessage, type TeacherReply, teacherReply } from "./teacher.js";

const AGENT = fileURLToPath(new URL("./agent.ts", import.meta.url));
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const tokenizer = new ByteTokenizer();

/** A request one of the servers received. */
interface Received {
  url: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

/** What the fake model does with a chat: a reply to send back, or an HTTP error status. */
type Policy = (messages: ChatMessage[], call: number) => TeacherReply | { status: number };

let toolCallCounter = 0;

/**
 * A non-stream chat completion in vLLM v0.19.0's shape (every key present; tool calls as the Hermes parser returns
 * them: `content: null`, ids `chatcmpl-tool-<16 hex>`, `finish_reason: "tool_calls"`; `token_ids` the raw generation
 * with `<tool_call>`…`</tool_call>` and the stop token `<|im_end|>` at the end). Prompt ids are fake: the bytes of the
 * request's messages JSON.
 */
function vllmCompletion(reply: TeacherReply, messages: unknown): Record<string, unknown> {
  const calls = "tool_calls" in reply ? reply.tool_calls : [];
  const generated =
    calls.length > 0
      ? calls.flatMap((c) => [
          tokenizer.toolCallStartId,
          ...tokenizer.encode(`{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`),
          tokenizer.toolCallEndId,
        ])
      : tokenizer.encode(reply.content ?? "");
  const tokenIds = [...generated, tokenizer.imEndId];
  const promptIds = tokenizer.encode(JSON.stringify(messages));
  const toolCalls = calls.map((c) => {
    toolCallCounter += 1;
    return {
      id: `chatcmpl-tool-${toolCallCounter.toString(16).padStart(16, "0")}`,
      type: "function",
      function: c.function,
    };
  });
  const message = {
    role: "assistant",
    content: calls.length > 0 ? null : reply.content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
    tool_calls: toolCalls,
    reasoning: null,
  };
  return {
    id: "chatcmpl-1a2b3c4d5e6f7a8b",
    object: "chat.completion",
    created: 1760000000,
    model: "policy",
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: calls.length > 0 ? "tool_calls" : "stop",
        stop_reason: null,
        token_ids: tokenIds,
      },
    ],
    service_tier: null,
    system_fingerprint: null,
    usage: {
      prompt_tokens: promptIds.length,
      total_tokens: promptIds.length + tokenIds.length,
      completion_tokens: tokenIds.length,
      prompt_tokens_details: null,
    },
    prompt_logprobs: null,
    prompt_token_ids: promptIds,
    kv_transfer_params: null,
  };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** Starts a server on 127.0.0.1:0 that records each request and lets `answer` respond. */
async function startServer(
  answer: (req: Received, res: ServerResponse) => void,
): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    readJson(req).then(
      (body) => {
        const entry = { url: req.url ?? "", authorization: req.headers.authorization, body };
        received.push(entry);
        answer(entry, res);
      },
      (err: unknown) => send(res, 400, { detail: String(err) }),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** The fake model: answers each chat with `policy`. */
function startModel(policy: Policy) {
  let calls = 0;
  return startServer((req, res) => {
    calls += 1;
    const messages = req.body.messages as ChatMessage[];
    const reply = policy(messages, calls);
    if ("status" in reply) {
      send(res, reply.status, {
        error: { message: "prompt is too long", type: "BadRequestError", param: null, code: 400 },
      });
    } else {
      send(res, 200, vllmCompletion(reply, messages));
    }
  });
}

/** The event endpoint: answers the n-th post with `statuses[n]` (the last one repeating); 200 echoes the event. */
function startEvents(...statuses: number[]) {
  let posts = 0;
  return startServer((req, res) => {
    const status = statuses[Math.min(posts, statuses.length - 1)] ?? 200;
    posts += 1;
    send(res, status, status === 200 ? { ...req.body, sequence: 1 } : { detail: `status ${status}` });
  });
}

/** Runs agent.ts (or `argv`) with the rollout environment and waits for it to exit. */
function runAgent(
  env: Record<string, string>,
  argv: readonly string[] = [process.execPath, "--import", "tsx", AGENT],
): Promise<ProcessResult> {
  return runProcess(argv, {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, ...env },
  });
}

async function setup(policy: Policy, eventStatuses: number[] = [200], extraEnv: Record<string, string> = {}) {
  const model = await startModel(policy);
  const events = await startEvents(...eventStatuses);
  const env = {
    QUESTION: "(twelve plus seven) times three",
    ANSWER: "57",
    AGL_OPENAI_BASE_URL: `${model.url}/proxy/rollout/r1/attempt/a1/mode/train/openai/v1`,
    AGL_KEY: "sk-test",
    AGL_EVENT_URL: `${events.url}/api/rollouts/r1/attempt/a1/events`,
    AGL_ROLLOUT_ID: "r1",
    AGL_ATTEMPT_ID: "a1",
    ...extraEnv,
  };
  return { model, events, env };
}

/** A policy that follows the teacher, except that its final answer is `final`. */
const teacherThen =
  (final: string): Policy =>
  (messages) => {
    const reply = teacherReply(messages);
    return "tool_calls" in reply ? reply : { role: "assistant", content: final };
  };

describe("calculator agent", () => {
  it("calls the tool, sends its result back, answers, and posts reward 1", async () => {
    const { model, events, env } = await setup((messages) => teacherReply(messages));
    const result = await runAgent(env);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);

    expect(model.received).toHaveLength(2);
    const [first, second] = model.received;
    expect(first!.url).toBe("/proxy/rollout/r1/attempt/a1/mode/train/openai/v1/chat/completions");
    expect(first!.authorization).toBe("Bearer sk-test");
    expect(first!.body.tools).toEqual([{ type: "function", function: { name: "calculator" } }]);
    expect(first!.body.messages).toEqual([{ role: "user", content: "(twelve plus seven) times three" }]);
    // The second call carries the model's own call verbatim and the tool result bound to its id.
    expect(second!.body.messages).toEqual([
      { role: "user", content: "(twelve plus seven) times three" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{16}$/),
            type: "function",
            function: { name: "calculator", arguments: '{"expression": "(12+7)*3"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: expect.any(String), content: "57" },
    ]);
    const secondMessages = second!.body.messages as ChatMessage[];
    expect(secondMessages[2]!.tool_call_id).toBe(secondMessages[1]!.tool_calls![0]!.id);

    expect(events.received).toHaveLength(1);
    expect(events.received[0]!.url).toBe("/api/rollouts/r1/attempt/a1/events");
    expect(events.received[0]!.authorization).toBe("Bearer sk-test");
    expect(events.received[0]!.body).toEqual({
      event_type: "reward",
      data: { value: 1, source: "calculator", reason: "correct", message: "answer=57 expected=57" },
      event_id: "reward-r1-a1",
    });
    expect(JSON.parse(result.stdout)).toMatchObject({ reason: "correct", value: 1, toolUsed: true, modelCalls: 2 });
  });

  it("sends no max_tokens unless CALC_MAX_TOKENS sets one", async () => {
    // A fixed cap plus a long second-turn prompt can overflow a 256-token context, which vLLM-style servers reject.
    const plain = await setup((messages) => teacherReply(messages));
    expect((await runAgent(plain.env)).code).toBe(0);
    expect(plain.model.received.map((r) => "max_tokens" in r.body)).toEqual([false, false]);
    const capped = await setup((messages) => teacherReply(messages), [200], { CALC_MAX_TOKENS: "40" });
    expect((await runAgent(capped.env)).code).toBe(0);
    expect(capped.model.received.map((r) => r.body.max_tokens)).toEqual([40, 40]);
  });

  it("posts the shaped reward for a wrong answer and still exits 0", async () => {
    const { events, env } = await setup(teacherThen("ANSWER: 56"));
    const result = await runAgent(env);
    expect(result.code).toBe(0);
    expect(events.received[0]!.body.data).toMatchObject({ value: 0.2, reason: "wrong" });
  });

  it("posts 0 when the model answers without the tool and without the format", async () => {
    const { model, events, env } = await setup(() => ({ role: "assistant", content: "I think 57" }));
    const result = await runAgent(env);
    expect(result.code).toBe(0);
    expect(model.received).toHaveLength(1);
    expect(events.received[0]!.body.data).toMatchObject({ value: 0, reason: "no_answer" });
  });

  it("stops after CALC_MAX_TURNS model calls when the model never stops calling the tool", async () => {
    const loop: Policy = () => teacherReply([{ role: "user", content: "1+1" }]);
    const { model, events, env } = await setup(loop, [200], { CALC_MAX_TURNS: "2" });
    const result = await runAgent(env);
    expect(result.code).toBe(0);
    expect(model.received).toHaveLength(2);
    expect(events.received[0]!.body.data).toMatchObject({
      value: 0.1,
      reason: "no_answer",
      message: "answer=none expected=57; no answer within the turn limit",
    });
  });

  it("ends the conversation unanswered when a later model call is rejected with 400", async () => {
    const { events, env } = await setup((messages, call) => (call === 1 ? teacherReply(messages) : { status: 400 }));
    const result = await runAgent(env);
    expect(result.code).toBe(0);
    expect(events.received[0]!.body.data).toMatchObject({ value: 0.1, reason: "no_answer" });
  });

  it("exits 1 when the reward is not accepted", async () => {
    const { events, env } = await setup((messages) => teacherReply(messages), [401]);
    const result = await runAgent(env);
    expect(result.code).toBe(1);
    expect(events.received).toHaveLength(1); // a 4xx is not retried
    expect(result.stderr).toContain("reward post rejected: HTTP 401");
  });

  it("retries the reward post after a 5xx with the same event_id", async () => {
    const { events, env } = await setup((messages) => teacherReply(messages), [503, 200]);
    const result = await runAgent(env);
    expect(result.code, result.stderr).toBe(0);
    expect(events.received.map((r) => r.body.event_id)).toEqual(["reward-r1-a1", "reward-r1-a1"]);
  });

  it("keeps the reward's event_id within the gateway's limit for the longest rollout id, stable across retries", async () => {
    // `reward-ROLLOUT-ATTEMPT` as the event_id would exceed the gateway's event_id limit for a rollout id near the
    // longest the gateway takes: the post would be rejected (422).
    const rolloutId = "r".repeat(200);
    const { events, env } = await setup((messages) => teacherReply(messages), [503, 200], {
      AGL_ROLLOUT_ID: rolloutId,
    });
    const result = await runAgent(env);
    expect(result.code, result.stderr).toBe(0);
    const [first, retried] = events.received.map((r) => r.body.event_id as string);
    expect(first).toMatch(/^reward-[0-9a-f]{64}$/);
    expect(retried).toBe(first);
  });

  it("exits 2 naming a missing variable, before calling the model", async () => {
    const { model, env } = await setup((messages) => teacherReply(messages));
    const { QUESTION: _dropped, ...rest } = env;
    const result = await runAgent(rest);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("environment variable QUESTION is required");
    expect(model.received).toHaveLength(0);
  });

  it("runs from its one-file bundle (scripts/bundle-agent.mjs) in a folder without node_modules", async () => {
    // `arclight demo` starts the bundle once per rollout; it must carry the openai SDK inside it.
    const dir = mkdtempSync(join(tmpdir(), "arclight-agent-bundle-"));
    try {
      const outfile = join(dir, "agent.js");
      const bundled = await runProcess([process.execPath, "scripts/bundle-agent.mjs", outfile], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH },
      });
      expect(bundled).toMatchObject({ code: 0, stderr: "" });
      const { model, events, env } = await setup((messages) => teacherReply(messages));
      const result = await runProcess([process.execPath, outfile], {
        cwd: dir,
        env: { PATH: process.env.PATH, ...env },
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(model.received).toHaveLength(2);
      expect(events.received.map((e) => e.body.data)).toEqual([
        { value: 1, source: "calculator", reason: "correct", message: "answer=57 expected=57" },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
