/**
 * @module Reasoning parsers by vLLM `--reasoning-parser` name, splitting `<think>…</think>` from the content.
 * @see vLLM `vllm/reasoning/basic_parsers.py`, `deepseek_r1_reasoning_parser.py`, `qwen3_reasoning_parser.py`
 */

/** A generation split by a reasoning parser. */
export interface SplitReasoning {
  /** The thinking text; null when the parser found none. */
  reasoning: string | null;
  /** The rest (what tool-call parsing reads next); null when nothing follows the reasoning. */
  content: string | null;
}

/** One reasoning format. */
export interface ReasoningParser {
  /** vLLM's `--reasoning-parser` name. */
  readonly name: string;
  /** Splits a whole generation (special tokens written as their strings, the stop token removed). */
  split(text: string): SplitReasoning;
}

const THINK_START = "<think>";
const THINK_END = "</think>";

/** The text after the first `<think>`, or the whole text when there is none. */
function afterStart(text: string): string {
  const start = text.indexOf(THINK_START);
  return start < 0 ? text : text.slice(start + THINK_START.length);
}

/** The split at the first `</think>` of a text that has one: reasoning before, content after (null when empty). */
function splitAtEnd(text: string): SplitReasoning {
  const end = text.indexOf(THINK_END);
  const content = text.slice(end + THINK_END.length);
  return { reasoning: text.slice(0, end), content: content === "" ? null : content };
}

/**
 * `deepseek_r1`: the opening `<think>` is optional (R1's template puts it in the prompt); without `</think>` it is all
 * reasoning. @example `"<think>2+2 is 4.</think>The answer is 4."` → reasoning `"2+2 is 4."`, content the rest
 */
export function splitDeepSeekR1Reasoning(text: string): SplitReasoning {
  const rest = afterStart(text);
  if (!rest.includes(THINK_END)) return { reasoning: rest, content: null };
  return splitAtEnd(rest);
}

/** `qwen3`: both `<think>` and `</think>` must be present, else everything is content and reasoning is null. */
export function splitQwen3Reasoning(text: string): SplitReasoning {
  if (!text.includes(THINK_START) || !text.includes(THINK_END)) return { reasoning: null, content: text };
  const rest = afterStart(text);
  if (!rest.includes(THINK_END)) return { reasoning: null, content: rest };
  return splitAtEnd(rest);
}

/** The reasoning parsers, keyed by vLLM's `--reasoning-parser` names. */
export const REASONING_PARSERS: Readonly<Record<string, ReasoningParser>> = {
  deepseek_r1: { name: "deepseek_r1", split: splitDeepSeekR1Reasoning },
  qwen3: { name: "qwen3", split: splitQwen3Reasoning },
};

/** The parser of a vLLM `--reasoning-parser` name. @throws {RangeError} listing the known names */
export function reasoningParser(name: string): ReasoningParser {
  const parser = Object.hasOwn(REASONING_PARSERS, name) ? REASONING_PARSERS[name] : undefined;
  if (parser === undefined) {
    throw new RangeError(`no reasoning parser "${name}" (known: ${Object.keys(REASONING_PARSERS).join(", ")})`);
  }
  return parser;
}
