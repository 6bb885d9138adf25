/**
 * The teacher served by the real engine server on 127.0.0.1:0: its answers must carry the ids the chat template gives
 * the same turn, so a recorded demonstration re-renders token for token.
 */
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { renderChatML } from "../../src/engine/embedded/chat-template.js";
import { ByteTokenizer } from "../../src/engine/embedded/tokenizer.js";
import type { ChatMessage } from "../../src/wire/chat.js";
import { CALCULATOR_TOOL, runToolCall } from "./calculator-tool.js";
import { promptTurns, TeacherEngine } from "./teacher-engine.js";
import { startTeacherServer } from "./teacher-server.js";

const tokenizer = new ByteTokenizer();
const servers: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface ChatAnswer {
  choices: { message: ChatMessage & { tool_calls: NonNullable<ChatMessage["tool_calls"]> }; token_ids: number[] }[];
  prompt_token_ids: number[];
}

async function chat(endpoint: string, messages: ChatMessage[]): Promise<ChatAnswer> {
  const response = await fetch(`${endpoint}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "teacher", messages, tools: [CALCULATOR_TOOL], return_token_ids: true }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as ChatAnswer;
}

describe("teacher engine", () => {
  it("reads the turns of a rendered prompt, leaving out the open generation prompt", () => {
    const ids = renderChatML(tokenizer, [{ role: "user", content: "2+2" }], { tools: [CALCULATOR_TOOL] });
    expect(promptTurns(tokenizer.decode(ids, false))).toEqual([
      { role: "system", text: 'Tools:\n{"name":"calculator"}' },
      { role: "user", text: "2+2" },
    ]);
  });

  it("answers a calculator chat through the engine server with the ids the template renders", async () => {
    const { server, endpoint } = await startTeacherServer();
    servers.push(server);
    const messages: ChatMessage[] = [{ role: "user", content: "(twelve plus seven) times three" }];

    const first = await chat(endpoint, messages);
    const call = first.choices[0]!.message.tool_calls[0]!;
    expect(call.function).toEqual({ name: "calculator", arguments: '{"expression": "(12+7)*3"}' });
    messages.push({ role: "assistant", content: null, tool_calls: [call] });
    // prompt ⧺ generated turn ⧺ the template's newline is the template's rendering of the chat with that turn.
    const rendered = renderChatML(tokenizer, messages, { tools: [CALCULATOR_TOOL], addGenerationPrompt: false });
    expect([...first.prompt_token_ids, ...first.choices[0]!.token_ids, ...tokenizer.encode("\n")]).toEqual(rendered);

    messages.push({ role: "tool", content: runToolCall("calculator", call.function.arguments) });
    const second = await chat(endpoint, messages);
    expect(second.choices[0]!.message.content).toBe("ANSWER: 57");
    expect(second.prompt_token_ids.slice(0, rendered.length)).toEqual(rendered);
    expect(second.choices[0]!.token_ids).toEqual([...tokenizer.encode("ANSWER: 57"), tokenizer.imEndId]);
  });

  it("ends the turn at once on a chat it cannot read", async () => {
    const engine = new TeacherEngine();
    const prompt = renderChatML(tokenizer, [{ role: "user", content: "what is love" }]);
    const [result] = await engine.generate([{ promptTokenIds: prompt, sampling: greedy }]);
    expect(result!.tokenIds).toEqual([tokenizer.imEndId]);
    await expect(engine.trainStep([], { kind: "sft", aggregation: "token-mean" }, optimizer)).rejects.toThrow(
      "cannot be trained",
    );
  });
});

const greedy = { temperature: 0, topP: 1, topK: 0, maxTokens: 16, stopTokenIds: [], stop: [] };
const optimizer = { learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 };
