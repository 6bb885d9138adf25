/** `classifyOutcome` on events shaped as the gateway records them (model_request data: request and response). */
import { describe, expect, it } from "vitest";
import { calculatorArguments } from "./calculator-tool.js";
import { classifyOutcome, type RecordedEvent } from "./outcomes.js";

/** A `model_request` event: the request's messages and the reply (text, or one calculator call). */
function call(messages: object[], reply: { content?: string; expression?: string; args?: string }): RecordedEvent {
  const args = reply.args ?? (reply.expression === undefined ? undefined : calculatorArguments(reply.expression));
  const toolCalls =
    args === undefined ? [] : [{ id: "c1", type: "function", function: { name: "calculator", arguments: args } }];
  const message = { role: "assistant", content: reply.content ?? null, tool_calls: toolCalls };
  return { event_type: "model_request", data: { request: { messages }, response: { choices: [{ message }] } } };
}

function reward(reason: string, value: number): RecordedEvent {
  return { event_type: "reward", data: { value, reason, source: "calculator" } };
}

const user = { role: "user", content: "7*11+31" };

/** A rollout that calls the tool with `expression`, gets `result`, and answers `answer`. */
function withTool(expression: string, result: string, answer: string, reason: string): RecordedEvent[] {
  const assistant = { role: "assistant", content: null, tool_calls: [] };
  const tool = { role: "tool", tool_call_id: "c1", content: result };
  return [call([user], { expression }), call([user, assistant, tool], { content: answer }), reward(reason, 0.2)];
}

describe("classifyOutcome", () => {
  it("correct whatever the path", () => {
    expect(classifyOutcome("7*11+31", [call([user], { content: "ANSWER: 108" }), reward("correct", 1)])).toBe(
      "correct",
    );
  });

  it("a wrong answer without a calculator call is 'no tool call'", () => {
    expect(classifyOutcome("7*11+31", [call([user], { content: "ANSWER: 9" }), reward("wrong", 0.1)])).toBe(
      "no tool call",
    );
  });

  it("a call whose expression differs from the question (blanks aside) miscopies the question", () => {
    expect(classifyOutcome("7*11+31", withTool("7*1+31", "38", "ANSWER: 38", "wrong"))).toBe(
      "tool call miscopies the question",
    );
    expect(classifyOutcome("7*11+31", withTool("7 * 11 + 31", "108", "ANSWER: 10", "wrong"))).toBe(
      "answer miscopies the tool result",
    );
  });

  it("the right call then a wrong or missing answer", () => {
    expect(classifyOutcome("7*11+31", withTool("7*11+31", "108", "ANSWER: 18", "wrong"))).toBe(
      "answer miscopies the tool result",
    );
    expect(classifyOutcome("7*11+31", withTool("7*11+31", "108", "<tool_call>{", "no_answer"))).toBe(
      "no answer after the tool result",
    );
  });

  it("'other' for no reward, no call, unparseable arguments, or a call whose result never came back", () => {
    expect(classifyOutcome("7*11+31", [call([user], { content: "ANSWER: 9" })])).toBe("other");
    expect(classifyOutcome("7*11+31", [reward("no_answer", 0)])).toBe("other");
    expect(classifyOutcome("7*11+31", [call([user], { args: "{not json" }), reward("no_answer", 0)])).toBe("other");
    expect(classifyOutcome("7*11+31", [call([user], { expression: "7*11+31" }), reward("no_answer", 0)])).toBe("other");
  });
});
