/**
 * The optimiser client with the real `openai` client against a scripted OpenAI-compatible server on loopback: checked
 * answers, the one retry (telling the optimiser what was wrong), failed requests and timeouts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Optimiser } from "./optimiser.js";
import { CRITIQUE_MARK, EDIT_MARK } from "./optimiser-messages.js";
import { type ChatAnswer, type ChatServer, startChatServer, systemText } from "./testing/chat-server.js";

let server: ChatServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function optimiserAnswering(answers: ChatAnswer[], timeoutMs = 5000): Promise<Optimiser> {
  server = await startChatServer((_, call) => answers[call] ?? { status: 500 });
  return new Optimiser({ baseUrl: server.url, model: "opt", apiKey: "k", timeoutMs, temperature: 0, maxTokens: 100 });
}

const rules = { count: 2, maxChars: 100, existing: ["Be brief."] };
const trace = { input: '{"question":"2+2"}', output: "5", reward: 0 };

describe("Optimiser", () => {
  it("sends the prompt and the low-reward traces for a critique and returns the answer", async () => {
    const optimiser = await optimiserAnswering([{ content: "The prompt never asks for the tool." }]);
    const critique = await optimiser.critique("Be brief.", [trace]);
    expect(critique).toMatchObject({ ok: true, value: "The prompt never asks for the tool.", attempts: 1 });
    const request = server!.requests[0]!;
    expect(systemText(request)).toContain(CRITIQUE_MARK);
    expect(request.model).toBe("opt");
    const user = String(request.messages[1]!.content);
    expect(user).toContain("Be brief.");
    expect(user).toContain('Input: {"question":"2+2"}');
    expect(user).toContain("reward 0.000");
  });

  it("returns checked proposals on the first valid answer", async () => {
    const optimiser = await optimiserAnswering([{ content: '{"prompts": ["Use the tool.", "Check the sum."]}' }]);
    const proposals = await optimiser.propose("Be brief.", "It never asks for the tool.", rules);
    expect(proposals).toMatchObject({ ok: true, value: ["Use the tool.", "Check the sum."], attempts: 1 });
    expect(systemText(server!.requests[0]!)).toContain(EDIT_MARK);
  });

  it("retries a malformed answer once, telling the optimiser what was wrong", async () => {
    const optimiser = await optimiserAnswering([
      { content: "Sure! 1. Use the tool. 2. Check the sum." },
      { content: '{"prompts": ["Use the tool.", "Check the sum."]}' },
    ]);
    const proposals = await optimiser.propose("Be brief.", "critique", rules);
    expect(proposals).toMatchObject({ ok: true, attempts: 2 });
    const retry = server!.requests[1]!.messages;
    expect(retry.at(-2)).toEqual({ role: "assistant", content: "Sure! 1. Use the tool. 2. Check the sum." });
    expect(String(retry.at(-1)!.content)).toContain("Your answer was rejected: the answer is not valid JSON");
  });

  it("reports both attempts' problems when the retry is bad too, and asks no third time", async () => {
    const optimiser = await optimiserAnswering([
      { content: '{"prompts": ["Use the tool."]}' },
      { content: '{"prompts": ["Be brief.", "Use the tool."]}' },
      { content: '{"prompts": ["never asked", "for"]}' },
    ]);
    const proposals = await optimiser.propose("Be brief.", "critique", rules);
    expect(proposals).toMatchObject({
      ok: false,
      attempts: 2,
      problems: ["attempt 1: expected 2 prompts, got 1", "attempt 2: prompt 1 repeats an earlier or current prompt"],
    });
    expect(server!.requests).toHaveLength(2);
  });

  it("retries a failed request (HTTP 500) with the same messages", async () => {
    const optimiser = await optimiserAnswering([{ status: 500 }, { content: "A critique." }]);
    const critique = await optimiser.critique("Be brief.", [trace]);
    expect(critique).toMatchObject({ ok: true, value: "A critique.", attempts: 2 });
    expect(server!.requests[1]!.messages).toEqual(server!.requests[0]!.messages);
  });

  it("reports a request that times out twice", async () => {
    const optimiser = await optimiserAnswering([{ stall: true }, { stall: true }], 300);
    const critique = await optimiser.critique("Be brief.", [trace]);
    expect(critique.ok).toBe(false);
    if (!critique.ok) expect(critique.problems[0]).toMatch(/^attempt 1: optimiser request failed: .*timed out/i);
    expect(server!.requests).toHaveLength(2);
  });
});
