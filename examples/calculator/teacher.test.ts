import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { evaluate } from "./calculator.js";
import type { Problem } from "./problems.js";
import { answersFromMemory, type ChatMessage, TeacherError, teacherReply, toExpression } from "./teacher.js";

const rows = (name: string): Problem[] =>
  readFileSync(new URL(`./data/${name}`, import.meta.url), "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Problem);

describe("toExpression", () => {
  it.each([
    ["12+7*3", "12+7*3"],
    [" 12 + 7 * 3 ", "12+7*3"],
    ["twelve plus seven times three", "12+7*3"],
    ["(forty-eight minus six) divided by seven", "(48-6)/7"],
    ["nine minus (two plus three)", "9-(2+3)"],
    ["one hundred eight divided by nine", "108/9"],
    ["What is forty two multiplied by two?", "42*2"],
    ["six over three", "6/3"],
    ["3 x 4 =", "3*4"],
    ["twenty plus 5", "20+5"],
  ])("translates %j to %j", (question, expression) => {
    expect(toExpression(question)).toBe(expression);
  });

  it("names the word it cannot read", () => {
    expect(() => toExpression("seven squared")).toThrow(
      new TeacherError('cannot read "squared" in question "seven squared"'),
    );
    expect(() => toExpression("seven five plus one")).toThrow('not a number: "seven five"');
  });

  it("translates every committed problem, both forms, to an expression with the row's answer", () => {
    for (const p of [...rows("train.jsonl"), ...rows("val.jsonl")])
      expect(evaluate(toExpression(p.question))).toBe(p.answer);
  });
});

describe("teacherReply", () => {
  it("first calls the calculator with the question in symbols", () => {
    expect(teacherReply([{ role: "user", content: "twelve plus seven times three" }])).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "calculator", arguments: '{"expression": "12+7*3"}' } },
      ],
    });
  });

  it("answers with the tool's result once the tool has replied", () => {
    const chat: ChatMessage[] = [{ role: "user", content: "(12+7)*3" }];
    const call = teacherReply(chat);
    chat.push(call, { role: "tool", tool_call_id: "call_1", content: "57" });
    expect(teacherReply(chat)).toEqual({ role: "assistant", content: "ANSWER: 57" });
  });

  it("computes the answer itself when the tool returned an error", () => {
    const chat: ChatMessage[] = [
      { role: "system", content: "Use the calculator." },
      { role: "user", content: [{ type: "text", text: "eight divided by two" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "x", type: "function", function: { name: "calculator", arguments: '{"expression": "8/"}' } },
        ],
      },
      { role: "tool", tool_call_id: "x", content: "error: unexpected end" },
    ];
    expect(teacherReply(chat)).toEqual({ role: "assistant", content: "ANSWER: 4" });
  });

  it("works on the latest question of a longer chat", () => {
    const chat: ChatMessage[] = [
      { role: "user", content: "1+1" },
      { role: "assistant", content: "ANSWER: 2" },
      { role: "user", content: "two times five" },
    ];
    const reply = teacherReply(chat);
    expect(reply.content).toBeNull();
    expect("tool_calls" in reply && reply.tool_calls[0]?.id).toBe("call_2");
    expect("tool_calls" in reply && reply.tool_calls[0]?.function.arguments).toBe('{"expression": "2*5"}');
  });

  it("refuses a chat without a question or one already answered", () => {
    expect(() => teacherReply([{ role: "system", content: "hi" }])).toThrow(new TeacherError("no user message"));
    expect(() =>
      teacherReply([
        { role: "user", content: "1+1" },
        { role: "assistant", content: "ANSWER: 2" },
      ]),
    ).toThrow("chat is already answered");
  });
});

describe("teacherReply with mentalMathShare", () => {
  const problems: Problem[] = readFileSync(new URL("./data/train.jsonl", import.meta.url), "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Problem);
  const user = (question: string): ChatMessage[] => [{ role: "user", content: question }];

  it("answers about that share of one-operation questions at once, correctly, and calls the tool for the rest", () => {
    const single = problems.filter((p) => /^\d+[+\-*/]\d+$/.test(toExpression(p.question)));
    expect(single.length).toBeGreaterThan(300);
    let direct = 0;
    for (const p of single) {
      const reply = teacherReply(user(p.question), { mentalMathShare: 0.7 });
      if (reply.content === null) continue;
      direct += 1;
      expect(reply.content).toBe(`ANSWER: ${p.answer}`);
    }
    expect(direct / single.length).toBeGreaterThan(0.6);
    expect(direct / single.length).toBeLessThan(0.8);
  });

  it("always calls the tool for questions with more than one operation, and by default for all", () => {
    for (const p of problems.slice(0, 200)) {
      const expression = toExpression(p.question);
      if (!/^\d+[+\-*/]\d+$/.test(expression)) {
        expect(teacherReply(user(p.question), { mentalMathShare: 1 }).content).toBeNull();
      }
      expect(teacherReply(user(p.question)).content).toBeNull();
    }
  });

  it("picks the same questions every time (a hash of the text), and share 0 or 1 means none or all", () => {
    expect(answersFromMemory("7*11", "7*11", 0.5)).toBe(answersFromMemory("7*11", "7*11", 0.5));
    expect(answersFromMemory("7*11", "7*11", 0)).toBe(false);
    expect(answersFromMemory("7*11", "7*11", 1)).toBe(true);
    expect(answersFromMemory("(7*11)", "(7*11)", 1)).toBe(false);
    expect(answersFromMemory("7*11+1", "7*11+1", 1)).toBe(false);
  });
});
