/**
 * @module Scripted teacher of the calculator task: from a chat so far, the ideal next assistant message — a
 * `calculator` call with the question translated to symbols, then `ANSWER: <n>` once the tool has answered. The
 * demonstrations of the SFT warm start are recorded from it.
 */
import { evaluate, formatNumber } from "./calculator.js";
import { CALCULATOR_TOOL_NAME, calculatorArguments } from "./calculator-tool.js";
import { isNumberWord, wordsToNumber } from "./number-words.js";

/** One message of an OpenAI chat, the fields the teacher reads. */
export interface ChatMessage {
  role: string;
  content?: string | null | { type: string; text?: string }[];
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** The teacher's reply: an assistant message in OpenAI's shape. */
export type TeacherReply =
  | { role: "assistant"; content: null; tool_calls: NonNullable<ChatMessage["tool_calls"]> }
  | { role: "assistant"; content: string };

/** The chat or question is not one the teacher can answer. */
export class TeacherError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TeacherError";
  }
}

const OPERATOR_WORDS: Record<string, string> = { plus: "+", minus: "-", times: "*", over: "/", x: "*" };
/** Two-word operators: the first word, then "by". */
const OPERATOR_PAIRS: Record<string, string> = { divided: "/", multiplied: "*" };

/** Splits a question into words and parentheses: "(two plus three) times four" → ["(", "two", …]. */
function tokens(text: string): string[] {
  return text.replace(/[()]/g, " $& ").split(/\s+/).filter(Boolean);
}

/** Reads one maximal run of number words from `words[start]`; returns the value and the index after it. */
function readNumber(words: string[], start: number): { value: number; next: number } {
  let next = start;
  while (next < words.length && isNumberWord(words[next]!)) next += 1;
  const parts = words.slice(start, next).flatMap((word) => word.split("-"));
  const value = wordsToNumber(parts);
  if (value === undefined) throw new TeacherError(`not a number: "${words.slice(start, next).join(" ")}"`);
  return { value, next };
}

/**
 * Translates a question to a symbolic expression: symbols pass through without blanks ("12 + 7*3" → "12+7*3"), words
 * are mapped ("twelve plus seven times three" → "12+7*3", "divided by" → "/", parentheses kept). A leading
 * "what is" and a trailing "?" or "=" are ignored.
 * @param question - the user's question
 * @returns the expression for the calculator
 * @throws {TeacherError} for a word that is neither a number, an operator nor a parenthesis
 */
export function toExpression(question: string): string {
  const text = question
    .toLowerCase()
    .trim()
    .replace(/^what is\s+/, "")
    .replace(/\s*[?=]+$/, "");
  if (/^[\d\s+\-*/()]+$/.test(text)) return text.replace(/\s+/g, "");
  const words = tokens(text);
  let out = "";
  for (let i = 0; i < words.length; ) {
    const word = words[i]!;
    if (/^[\d+\-*/()]+$/.test(word)) {
      out += word;
      i += 1;
    } else if (OPERATOR_WORDS[word] !== undefined) {
      out += OPERATOR_WORDS[word];
      i += 1;
    } else if (OPERATOR_PAIRS[word] !== undefined && words[i + 1] === "by") {
      out += OPERATOR_PAIRS[word];
      i += 2;
    } else if (isNumberWord(word)) {
      const { value, next } = readNumber(words, i);
      out += String(value);
      i = next;
    } else {
      throw new TeacherError(`cannot read "${word}" in question "${question}"`);
    }
  }
  return out;
}

/** The text of a message's content: parts joined, null/absent as "". */
function contentText(content: ChatMessage["content"]): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((part) => part.text ?? "").join("");
}

/** How the teacher behaves. */
export interface TeacherOptions {
  /**
   * Share in [0, 1] of one-operation questions (`"7*11"`, `"12+7"`) the teacher answers from memory, with no tool
   * call: `ANSWER: <n>`, always correct. Which questions is fixed by a hash of the question text, so the same
   * question always gets the same demonstration. Default 0 (always the tool). A policy that imitates these
   * demonstrations but cannot do the arithmetic itself answers them wrongly; the reward tells RL to call the tool.
   */
  mentalMathShare?: number;
}

/** Matches a one-operation expression in symbols: two numbers and one operator, no parentheses. */
const ONE_OPERATION = /^-?\d+[+\-*/]\d+$/;

/**
 * Whether the teacher answers this question from memory: a one-operation expression whose stable fraction (FNV-1a
 * hash of the question's UTF-8 bytes, mod 1000, / 1000) is below `share`.
 * @see http://www.isthe.com/chongo/tech/comp/fnv/ (FNV-1a, 32 bit)
 */
export function answersFromMemory(question: string, expression: string, share: number): boolean {
  if (share <= 0 || !ONE_OPERATION.test(expression)) return false;
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(question, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return (hash % 1000) / 1000 < share;
}

/**
 * The ideal next assistant message of a calculator chat (OpenAI format). Before any tool result after the last user
 * message: a `calculator` call (`{"expression": "<symbols>"}`, canonical argument text, id `call_<n>`). After a tool
 * result: `ANSWER: <result>`; when the result is not a number (a tool error), the teacher computes the answer itself.
 * A system message and tools are ignored. With `options.mentalMathShare`, some one-operation questions are answered
 * at once instead (see {@link TeacherOptions}).
 * @param messages - the chat so far, oldest first; must contain a user message
 * @param options - see {@link TeacherOptions}
 * @returns the assistant message
 * @throws {TeacherError} when there is no user message, the chat is already answered, or the question is unreadable
 * @throws {CalculatorError} when the tool failed and the question itself cannot be evaluated (e.g. division by zero)
 */
export function teacherReply(messages: readonly ChatMessage[], options: TeacherOptions = {}): TeacherReply {
  const userIndex = messages.findLastIndex((m) => m.role === "user");
  if (userIndex < 0) throw new TeacherError("no user message");
  const question = contentText(messages[userIndex]!.content);
  const after = messages.slice(userIndex + 1);
  const last = after.at(-1);
  if (last?.role === "assistant" && !last.tool_calls?.length) throw new TeacherError("chat is already answered");
  const expression = toExpression(question);
  const toolResults = after.filter((m) => m.role === "tool");
  if (toolResults.length === 0) {
    if (answersFromMemory(question, expression, options.mentalMathShare ?? 0)) {
      return { role: "assistant", content: `ANSWER: ${formatNumber(evaluate(expression))}` };
    }
    const id = `call_${messages.filter((m) => m.role === "assistant").length + 1}`;
    const call = { name: CALCULATOR_TOOL_NAME, arguments: calculatorArguments(expression) };
    return { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: call }] };
  }
  const result = contentText(toolResults.at(-1)!.content).trim();
  const answer = /^-?\d+(\.\d+)?$/.test(result) ? result : formatNumber(evaluate(expression));
  return { role: "assistant", content: `ANSWER: ${answer}` };
}
