/**
 * @module The `calculator` function tool as offered to a model: its OpenAI tool definition, the canonical text of
 * its arguments, and how a tool call is answered.
 */
import { calculator } from "./calculator.js";

/** The tool's name in tool calls. */
export const CALCULATOR_TOOL_NAME = "calculator";

/**
 * The tool definition offered to the tiny policy, in OpenAI's `tools[i]` shape: the name only. The policy's whole
 * conversation must fit in ~256 byte tokens and the chat template writes the tool schema into every prompt; a JSON
 * schema for the one `expression` parameter would cost ~65 tokens each time, and the demonstrations teach the
 * argument shape anyway. OpenAI reads a function without `parameters` as one taking an empty parameter list.
 * @see https://platform.openai.com/docs/api-reference/chat/create (tools[].function.parameters)
 */
export const CALCULATOR_TOOL = Object.freeze({
  type: "function" as const,
  function: { name: CALCULATOR_TOOL_NAME },
});

/** The same tool fully described, for a general-purpose model that has never seen a demonstration. */
export const CALCULATOR_TOOL_DESCRIBED = Object.freeze({
  type: "function" as const,
  function: {
    name: CALCULATOR_TOOL_NAME,
    description: "Evaluates an integer arithmetic expression with + - * / and parentheses.",
    parameters: {
      type: "object",
      properties: { expression: { type: "string", description: "e.g. (12+7)*3" } },
      required: ["expression"],
    },
  },
});

/**
 * The arguments string of a calculator call, in the canonical `json.dumps` style (`{"expression": "2+3"}`, a space
 * after the colon) that vLLM's Hermes tool parser re-serialises to, so a demonstration and a parsed model call render
 * to the same tokens.
 * @param expression - the expression in symbols, e.g. `"12+7*3"`
 * @returns the JSON text
 * @see vLLM `hermes_tool_parser.py` (arguments re-dumped with `json.dumps(..., ensure_ascii=False)`)
 */
export function calculatorArguments(expression: string): string {
  return `{"expression": ${JSON.stringify(expression)}}`;
}

/**
 * Answers one tool call the way the agent sends it back to the model: the calculator's result text, or a short
 * `error: …` for an unknown tool or arguments that are not `{"expression": "<text>"}`. Never throws.
 * @param name - the called function's name
 * @param argumentsText - the call's arguments string (JSON)
 * @returns the tool message content
 */
export function runToolCall(name: string, argumentsText: string): string {
  if (name !== CALCULATOR_TOOL_NAME) return `error: unknown tool ${JSON.stringify(name).slice(0, 40)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsText);
  } catch {
    return "error: arguments are not JSON";
  }
  const expression = (parsed as { expression?: unknown } | null)?.expression;
  if (typeof expression !== "string") return 'error: expected {"expression": "..."}';
  return calculator(expression);
}
