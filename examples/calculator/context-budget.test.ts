/**
 * The tiny policy reads ~256 byte tokens. This drives the teacher through every committed problem and counts the
 * tokens of the whole solved conversation the way the embedded chat template renders it: each special token
 * (`<|im_start|>`, `<|im_end|>`, `<tool_call>`, `</tool_call>`) is one id, everything else one id per UTF-8 byte.
 * The count mirrors `renderChatML` of src/engine/embedded/chat-template.ts (tools as one compact JSON line each in the
 * system turn; a tool call as `{"name": NAME, "arguments": ARGS}`).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CALCULATOR_TOOL, runToolCall } from "./calculator-tool.js";
import type { Problem } from "./problems.js";
import { type ChatMessage, teacherReply } from "./teacher.js";

/** Most tokens a solved conversation may take: leaves >= 40 of a 256-token context for sampling slack. */
const BUDGET_TOKENS = 216;

const bytes = (text: string): number => Buffer.byteLength(text, "utf8");

/** Tokens of `<|im_start|>{role}\n{content}[<tool_call>…</tool_call>]*<|im_end|>\n`. */
function turnTokens(role: string, content: string, calls: ChatMessage["tool_calls"] = []): number {
  const callTokens = calls.map(
    (c) => 2 + bytes(`{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`),
  );
  return 1 + bytes(`${role}\n${content}`) + callTokens.reduce((a, b) => a + b, 0) + 2;
}

function conversationTokens(messages: ChatMessage[]): number {
  const { name } = CALCULATOR_TOOL.function;
  let total = turnTokens("system", `Tools:\n${JSON.stringify({ name })}`);
  for (const m of messages) total += turnTokens(m.role, typeof m.content === "string" ? m.content : "", m.tool_calls);
  return total;
}

/** The teacher's full conversation for one problem: question, tool call, tool result, answer. */
function solvedChat(problem: Problem): ChatMessage[] {
  const chat: ChatMessage[] = [{ role: "user", content: problem.question }];
  const call = teacherReply(chat);
  if (!("tool_calls" in call)) throw new Error("teacher did not call the tool first");
  const { id, function: fn } = call.tool_calls[0]!;
  chat.push(call, { role: "tool", tool_call_id: id, content: runToolCall(fn.name, fn.arguments) });
  chat.push(teacherReply(chat));
  return chat;
}

describe("context budget", () => {
  const problems = ["train.jsonl", "val.jsonl"].flatMap((name) =>
    readFileSync(new URL(`./data/${name}`, import.meta.url), "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Problem),
  );

  it(`fits every solved conversation in ${BUDGET_TOKENS} tokens and ends with the right answer`, () => {
    for (const problem of problems) {
      const chat = solvedChat(problem);
      expect(chat.at(-1)?.content).toBe(`ANSWER: ${problem.answer}`);
      expect(conversationTokens(chat), problem.question).toBeLessThanOrEqual(BUDGET_TOKENS);
    }
  });

  it("counts a known conversation token by token", () => {
    // system: 1 + "system\nTools:\n{"name":"calculator"}" (35) + 2 = 38; user "2+2": 1 + 8 + 2 = 11;
    // call: 1 + "assistant\n" (10) + 2 specials + `{"name": "calculator", "arguments": {"expression": "2+2"}}` (58)
    // + 2 = 73; tool "4": 1 + 6 + 2 = 9; answer "ANSWER: 4": 1 + 19 + 2 = 22. Total 38 + 11 + 73 + 9 + 22 = 153.
    expect(
      conversationTokens(solvedChat({ data_id: "x", question: "2+2", answer: 4, level: 1, form: "symbols" })),
    ).toBe(153);
  });
});
