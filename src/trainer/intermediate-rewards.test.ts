import { describe, expect, it } from "vitest";
import type { SpanData } from "../protocol/span.js";
import { IntermediateRuleSchema } from "./config.js";
import { callBeforeSpan, intermediateRewarder } from "./intermediate-rewards.js";
import type { ModelCall } from "./triplets.js";

function call(turn: number, fields: Partial<ModelCall>): ModelCall {
  return {
    turn,
    sequence: turn + 1,
    promptTokenIds: [1],
    responseTokenIds: [2],
    logprobs: [-1],
    policyVersion: 0,
    ...fields,
  };
}

/** A tool span starting at `startS` seconds (epoch), with a status. */
function toolSpan(startS: number, status: "ok" | "error" | "unset"): SpanData {
  const ns = `${BigInt(Math.round(startS * 1000)) * 1_000_000n}`;
  return {
    name: "execute_tool calc",
    trace_id: "0".repeat(32),
    span_id: "1".repeat(16),
    parent_span_id: null,
    kind: "internal",
    start_time_unix_nano: ns,
    end_time_unix_nano: ns,
    status: { code: status, message: "" },
    attributes: { "gen_ai.tool.name": "calc", "gen_ai.operation.name": "execute_tool" },
    events: [],
    links: [],
    resource: {},
    scope: { name: "t", version: "" },
  };
}

const rules = (raw: unknown[]) => raw.map((r) => IntermediateRuleSchema.parse(r));

describe("intermediateRewarder", () => {
  it("rewards the call before a tool span by the span's status (unset counts as ok)", () => {
    const calls = [call(0, { timestamp: 100 }), call(1, { timestamp: 105 })];
    const spans = [toolSpan(101, "error"), toolSpan(106, "unset"), toolSpan(99, "error")];
    const score = intermediateRewarder(
      rules([
        { rule: "tool_status", status: "error", weight: -1 },
        { rule: "tool_status", status: "ok", weight: 0.5, name: "tool_ok" },
      ]),
    );
    expect(score(calls, spans)).toEqual({
      callRewards: [-1, 0.5],
      hits: { tool_status: 1, tool_ok: 1 },
      unattributed: 1, // the span at 99 s started before any call
    });
  });

  it("penalises a tool call whose arguments do not parse, are not an object, or name an unknown tool", () => {
    const tools = { toolNames: ["calc"] };
    const calls = [
      call(0, { ...tools, toolCalls: [{ name: "calc", arguments: '{"x": 1}' }] }),
      call(1, { ...tools, toolCalls: [{ name: "calc", arguments: '{"x": ' }] }),
      call(2, { ...tools, toolCalls: [{ name: "calc", arguments: "[1]" }] }),
      call(3, { ...tools, toolCalls: [{ name: "search", arguments: "{}" }] }),
      call(4, { toolCalls: [{ name: "anything", arguments: "{}" }] }),
    ];
    const out = intermediateRewarder(rules([{ rule: "invalid_tool_call", weight: -0.5 }]))(calls, []);
    expect(out.callRewards).toEqual([0, -0.5, -0.5, -0.5, 0]);
    expect(out.hits).toEqual({ invalid_tool_call: 3 });
  });

  it("penalises finish_reason length", () => {
    const calls = [call(0, { finishReason: "length" }), call(1, { finishReason: "stop" }), call(2, {})];
    const out = intermediateRewarder(rules([{ rule: "finish_length", weight: -0.2 }]))(calls, []);
    expect(out.callRewards).toEqual([-0.2, 0, 0]);
  });

  it("checks the response text against a regex, hitting on mismatch by default or on match", () => {
    const calls = [call(0, { responseText: "ANSWER: 12" }), call(1, { responseText: "twelve" }), call(2, {})];
    const out = intermediateRewarder(
      rules([
        { rule: "format", regex: "^ANSWER: -?\\d+$", weight: -1, name: "bad_format" },
        { rule: "format", regex: "^ANSWER:", on: "match", weight: 0.1, name: "good_format" },
      ]),
    )(calls, []);
    expect(out.callRewards).toEqual([0.1, -1, 0]);
    expect(out.hits).toEqual({ bad_format: 1, good_format: 1 });
  });

  it("checks the response text as JSON against a JSON schema", () => {
    const schema = { type: "object", properties: { answer: { type: "number" } }, required: ["answer"] };
    const calls = [
      call(0, { responseText: '{"answer": 3}' }),
      call(1, { responseText: '{"answer": "3"}' }),
      call(2, { responseText: "not json" }),
    ];
    const out = intermediateRewarder(rules([{ rule: "format", json_schema: schema, weight: -1 }]))(calls, []);
    expect(out.callRewards).toEqual([0, -1, -1]);
  });

  it("reports every configured rule, with 0 when it never hit", () => {
    const out = intermediateRewarder(rules([{ rule: "finish_length", weight: -1 }]))([call(0, {})], []);
    expect(out.hits).toEqual({ finish_length: 0 });
  });
});

describe("IntermediateRuleSchema", () => {
  it("refuses a format rule with both or neither check, and a bad regex", () => {
    expect(IntermediateRuleSchema.safeParse({ rule: "format", weight: 1 }).success).toBe(false);
    expect(IntermediateRuleSchema.safeParse({ rule: "format", weight: 1, regex: "a", json_schema: {} }).success).toBe(
      false,
    );
    expect(IntermediateRuleSchema.safeParse({ rule: "format", weight: 1, regex: "(" }).success).toBe(false);
  });
});

describe("callBeforeSpan", () => {
  it("is -1 when calls carry no timestamp", () => {
    expect(callBeforeSpan([call(0, {})], toolSpan(5, "ok"))).toBe(-1);
  });
});
