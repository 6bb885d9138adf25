/**
 * Real client libraries as unchanged agents: each stack's agent (test/fixtures/stacks/) builds its client with no
 * arguments, so only the controller's standard env vars point it at the gateway, and runs a `get_weather` tool loop
 * against a fake vLLM, streaming and not. Responses and Anthropic calls are translated to chat completions, so every
 * stack must be recorded exactly as the chat path records: one event per call, ids and logprobs aligned, what the agent
 * saw equal to the recorded answer, a streamed run recorded like the non-streamed one.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import type { ModelRequestData, Rollout } from "../src/protocol/index.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";

const STACKS = resolve(import.meta.dirname, "fixtures/stacks");
/** The Python stacks run when a venv is found (a note says what is missing otherwise; a failure under CI). */
const python = skipWithoutPython() ? null : testPython();

/** Stack name → agent command. */
const AGENTS: Record<string, string[]> = {
  "openai-chat": ["node", join(STACKS, "openai-chat.mjs")],
  "openai-responses": ["node", join(STACKS, "openai-responses.mjs")],
  "ai-sdk": ["node", join(STACKS, "ai-sdk.mjs")],
  "openai-agents": ["node", join(STACKS, "openai-agents.mjs")],
  anthropic: ["node", join(STACKS, "anthropic.mjs")],
  langchain: ["node", join(STACKS, "langchain.mjs")],
  mastra: ["node", join(STACKS, "mastra.mjs")],
  ...(python === null
    ? {}
    : {
        "python-openai-chat": [python, join(STACKS, "openai_chat.py")],
        "python-openai-responses": [python, join(STACKS, "openai_responses.py")],
      }),
};
const MODELS = ["gpt-4o-mini", "claude-3-5-haiku-latest"];
const ANSWER = "It is sunny in Paris.";

interface Seen {
  calls: number;
  toolCall: { name: string; arguments: unknown };
  text: string;
}
interface Run {
  rollout: Rollout;
  seen: Seen | null;
  events: ModelRequestData[];
}
type ChatResponse = {
  choices: {
    message: { content: string | null; tool_calls: { function: { name: string; arguments: string } }[] };
    token_ids: number[];
    logprobs: { content: unknown[] } | null;
  }[];
};

let h: ControllerHarness;
let fake: FakeVllm;
const runs = new Map<string, Run>();

beforeAll(async () => {
  fake = await FakeVllm.start({
    decide: (body) =>
      (body.messages as { role: string }[]).some((m) => m.role === "tool")
        ? { content: ANSWER }
        : { toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
  });
  h = await startHarness();
  await h.gateway.call(
    "POST",
    "/api/models",
    MODELS.map((model) => ({ model, endpoint: fake.url })),
  );
  const creates = Object.entries(AGENTS).flatMap(([stack, command]) =>
    [false, true].map((stream) => ({
      // The tag (in the question) is the stack only: both modes send the same prompts, so their records compare equal.
      input: { tag: stack, stream, out: join(h.dir, `${stack}-${stream}.json`) },
      config: { local: { command, env_map: { TAG: "input.tag", STREAM: "input.stream", OUT: "input.out" } } },
    })),
  );
  const rollouts = await h.create(creates);
  h.controller({ pool_size: 18 }).start();
  const done = await h.waitTerminal(
    rollouts.map((r) => r.rollout_id),
    150_000,
  );
  for (const rollout of done) {
    const input = rollout.input as { tag: string; stream: boolean; out: string };
    const events = await h.gateway.store.listEvents(rollout.rollout_id, { eventType: "model_request" });
    let seen: Seen | null = null;
    try {
      seen = JSON.parse(readFileSync(input.out, "utf8")) as Seen;
    } catch {
      seen = null;
    }
    runs.set(`${input.tag}/${input.stream}`, { rollout, seen, events: events.map((e) => e.data as ModelRequestData) });
  }
}, 200_000);

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

/** The generated part of a recorded call: ids, logprobs, text, tool names, finish reason. */
function generated(event: ModelRequestData) {
  const choice = (event.response as ChatResponse).choices[0]!;
  const names = choice.message.tool_calls.map((call) => call.function.name);
  return { ids: choice.token_ids, logprobs: choice.logprobs, content: choice.message.content, names };
}

async function failureLog(run: Run): Promise<string> {
  const logs = await h.gateway.store.listEvents(run.rollout.rollout_id, { eventType: "log" });
  return `${run.rollout.status.error_message}\n${logs.map((e) => (e.data as { text: string }).text).join("\n")}`;
}

function callsSeenByFake(tag: string): number {
  return fake.received.filter((call) => JSON.stringify(call.body.messages).includes(`(${tag})`)).length;
}

describe("agents on popular client stacks, configured only by the standard env vars", () => {
  for (const stack of Object.keys(AGENTS)) {
    it(`${stack}: captured streamed and not, recorded alike, as the agent saw it`, async () => {
      const byMode: Run[] = [];
      for (const stream of [false, true]) {
        const tag = `${stack}/${stream}`;
        const run = runs.get(tag)!;
        expect(run.rollout.status.state, await failureLog(run)).toBe("succeeded");
        const seen = run.seen!;
        // Every model call the agent made is one recorded event (and one upstream call, counted below).
        expect(seen.calls).toBe(2);
        expect(run.events).toHaveLength(seen.calls);
        for (const event of run.events) {
          expect(event.status).toBe("ok");
          expect(event.capture_incomplete).toBeUndefined();
          expect(event.request).toHaveProperty("messages");
          expect((event.request as { stream?: boolean }).stream === true).toBe(stream);
          const choice = (event.response as ChatResponse).choices[0]!;
          expect(choice.token_ids.length).toBeGreaterThan(0);
          expect(choice.logprobs?.content).toHaveLength(choice.token_ids.length);
        }
        // What the agent saw is what was recorded.
        const [first, last] = run.events.map((e) => (e.response as ChatResponse).choices[0]!.message);
        expect(seen.toolCall.name).toBe(first!.tool_calls[0]!.function.name);
        expect(seen.toolCall.arguments).toEqual(JSON.parse(first!.tool_calls[0]!.function.arguments));
        expect(seen.text).toBe(last!.content);
        expect(seen.text).toBe(ANSWER);
        byMode.push(run);
      }
      const [plain, streamed] = byMode;
      expect(callsSeenByFake(stack)).toBe(plain!.seen!.calls + streamed!.seen!.calls);
      plain!.events.forEach((event, i) => {
        const other = streamed!.events[i]!;
        const { stream: _s, stream_options: _o, ...request } = event.request as Record<string, unknown>;
        const { stream: _t, stream_options: _p, ...otherRequest } = other.request as Record<string, unknown>;
        // The same prompt must be recorded identically. A chat client that echoes back the message object it got
        // sends a different history when it streamed (no `refusal`, `annotations`… keys), so the next prompt's ids
        // differ: then the generated part must still be recorded alike.
        if (JSON.stringify(request) === JSON.stringify(otherRequest)) expect(other.response).toEqual(event.response);
        else expect(generated(other)).toEqual(generated(event));
      });
    });
  }
});
