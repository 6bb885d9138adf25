/**
 * @module Automatic intermediate rewards (`trainer.intermediate_rewards`): rules on a rollout's spans and model calls
 * — a tool span's status, a tool call that does not parse or names an unknown tool, a response cut by the length
 * limit, a regex or JSON-schema format check — each adding its weight to one call's reward, each hit counted.
 * Nothing here logs; the counts become the step's `intermediate/*` metrics.
 */
import { z } from "zod";
import type { SpanData } from "../protocol/span.js";
import type { IntermediateRule } from "./config.js";
import type { ModelCall } from "./triplets.js";

/** What the rules gave one rollout. */
export interface IntermediateRewards {
  /** Σ of the weights of the rules that hit each call, [calls]. */
  callRewards: number[];
  /** Hits of each rule, by rule name (every configured rule present, 0 when it never hit). */
  hits: Record<string, number>;
  /** Tool-span hits with no model call before the span to give the reward to (not used). */
  unattributed: number;
}

/** A rule ready to run: its name, weight and test. */
interface CompiledRule {
  name: string;
  weight: number;
  /** Calls hit by the rule (indices, repeats allowed), plus tool-span hits that found no call. */
  apply(calls: readonly ModelCall[], spans: readonly SpanData[]): { hits: number[]; unattributed: number };
}

/** The rule's name: its own, else its kind. */
export function ruleName(rule: IntermediateRule): string {
  return rule.name ?? rule.rule;
}

/** True for a span of a tool execution (GenAI conventions: `gen_ai.tool.name`, or operation `execute_tool`). */
function isToolSpan(span: SpanData): boolean {
  const attributes = span.attributes ?? {};
  return typeof attributes["gen_ai.tool.name"] === "string" || attributes["gen_ai.operation.name"] === "execute_tool";
}

/**
 * The call a tool span follows: the last call recorded (server clock) at or before the span started, i.e. the call
 * whose answer asked for the tool. -1 when no call precedes it or calls carry no timestamp.
 */
export function callBeforeSpan(calls: readonly ModelCall[], span: SpanData): number {
  const startS = Number(BigInt(span.start_time_unix_nano) / 1_000_000n) / 1000;
  let found = -1;
  calls.forEach((call, i) => {
    if (call.timestamp !== undefined && call.timestamp <= startS) found = i;
  });
  return found;
}

function toolStatusRule(rule: Extract<IntermediateRule, { rule: "tool_status" }>): CompiledRule["apply"] {
  // OTel leaves a successful span's status `unset` unless the code sets `ok`: both count as success.
  const matches = (span: SpanData) =>
    rule.status === "error" ? span.status.code === "error" : span.status.code !== "error";
  return (calls, spans) => {
    const out = { hits: [] as number[], unattributed: 0 };
    for (const span of spans) {
      if (!isToolSpan(span) || !matches(span)) continue;
      const target = callBeforeSpan(calls, span);
      if (target < 0) out.unattributed += 1;
      else out.hits.push(target);
    }
    return out;
  };
}

/** True when a tool call's arguments are not a JSON object, or it names a tool the request did not offer. */
function invalidToolCall(call: ModelCall): boolean {
  return (call.toolCalls ?? []).some((toolCall) => {
    if (call.toolNames !== undefined && !call.toolNames.includes(toolCall.name)) return true;
    try {
      const parsed: unknown = JSON.parse(toolCall.arguments);
      return parsed === null || typeof parsed !== "object" || Array.isArray(parsed);
    } catch {
      return true;
    }
  });
}

/** A per-call rule: every call the test passes is hit once. */
function perCall(test: (call: ModelCall) => boolean): CompiledRule["apply"] {
  return (calls) => ({ hits: calls.flatMap((call, i) => (test(call) ? [i] : [])), unattributed: 0 });
}

function formatRule(rule: Extract<IntermediateRule, { rule: "format" }>): CompiledRule["apply"] {
  const regex = rule.regex === undefined ? null : new RegExp(rule.regex);
  const schema = rule.json_schema === undefined ? null : z.fromJSONSchema(rule.json_schema as never);
  const conforms = (text: string): boolean => {
    if (regex !== null) return regex.test(text);
    try {
      return schema?.safeParse(JSON.parse(text)).success === true;
    } catch {
      return false;
    }
  };
  // A call without text (only tool calls) is not checked.
  return perCall((call) => call.responseText !== undefined && conforms(call.responseText) === (rule.on === "match"));
}

function compile(rule: IntermediateRule): CompiledRule {
  const base = { name: ruleName(rule), weight: rule.weight };
  switch (rule.rule) {
    case "tool_status":
      return { ...base, apply: toolStatusRule(rule) };
    case "invalid_tool_call":
      return { ...base, apply: perCall(invalidToolCall) };
    case "finish_length":
      return { ...base, apply: perCall((call) => call.finishReason === "length") };
    case "format":
      return { ...base, apply: formatRule(rule) };
  }
}

/**
 * Compiles the configured rules once; the result scores one rollout at a time.
 * @param rules - `trainer.intermediate_rewards`
 * @returns a scorer: calls and spans of one rollout → per-call rewards and hit counts
 * @throws {SyntaxError} for an invalid `regex` (the config schema checks it first)
 */
export function intermediateRewarder(
  rules: readonly IntermediateRule[],
): (calls: readonly ModelCall[], spans: readonly SpanData[]) => IntermediateRewards {
  const compiled = rules.map(compile);
  return (calls, spans) => {
    const out: IntermediateRewards = { callRewards: calls.map(() => 0), hits: {}, unattributed: 0 };
    for (const rule of compiled) {
      const { hits, unattributed } = rule.apply(calls, spans);
      out.hits[rule.name] = (out.hits[rule.name] ?? 0) + hits.length;
      out.unattributed += unattributed;
      for (const i of hits) out.callRewards[i] = (out.callRewards[i] ?? 0) + rule.weight;
    }
    return out;
  };
}
