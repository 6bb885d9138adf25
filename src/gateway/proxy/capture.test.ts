/** @module Tests of the capture check: each reason a call's capture is incomplete, on vLLM-shaped bodies. */
import { describe, expect, it } from "vitest";
import { checkCapture } from "./record-call.js";

/** A non-stream chat body in vLLM's shape: ids, one logprob per id, usage counting the ids. */
function chat(ids: number[], logprobs: (number | null)[] | null, extra: Record<string, unknown> = {}) {
  return {
    prompt_token_ids: [1, 2, 3],
    choices: [
      {
        index: 0,
        finish_reason: "stop",
        token_ids: ids,
        logprobs: logprobs === null ? null : { content: logprobs.map((logprob) => ({ logprob })) },
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: ids.length, total_tokens: 3 + ids.length },
    ...extra,
  };
}

describe("checkCapture", () => {
  it("finds nothing wrong with a complete answer", () => {
    const body = chat([21, 22, 2], [-0.1, -0.2, -0.01]);
    expect(checkCapture("chat", body, true)).toEqual({ response: body, reasons: [] });
  });

  // vLLM before PR #29074 skipped tool-parser-suppressed stream chunks: ids and logprobs lined up, usage did not.
  it("flags ids that disagree with the upstream's usage.completion_tokens", () => {
    const body = chat([21, 22], [-0.1, -0.2], { usage: { completion_tokens: 5 } });
    expect(checkCapture("chat", body, true).reasons).toEqual(["usage_mismatch"]);
  });

  it("flags a null or non-number logprob entry, keeping the ids", () => {
    expect(checkCapture("chat", chat([21, 22], [-0.1, null]), true).reasons).toEqual(["logprobs_nonfinite"]);
  });

  it("flags vLLM's -9999 (its stand-in for -inf) and any logprob below the -50 floor, keeping ids and values", () => {
    const checked = checkCapture("chat", chat([21, 22], [-0.1, -9999]), true);
    expect(checked.reasons).toEqual(["logprobs_below_floor"]);
    expect(checkCapture("chat", chat([21], [-50.5]), true).reasons).toEqual(["logprobs_below_floor"]);
    expect(checkCapture("chat", chat([21], [-50]), true).reasons).toEqual([]);
    expect(checked.response).toEqual(chat([21, 22], [-0.1, -9999]));
  });

  it("flags asked-for logprobs that are missing, and nulls misaligned ones", () => {
    expect(checkCapture("chat", chat([21], null), true).reasons).toEqual(["logprobs_missing"]);
    expect(checkCapture("chat", chat([21], null), false).reasons).toEqual([]);
    const checked = checkCapture("chat", chat([21, 22], [-0.1]), true);
    expect(checked.reasons).toEqual(["logprobs_misaligned"]);
    expect((checked.response.choices as { logprobs: unknown }[])[0]?.logprobs).toBeNull();
  });

  it("flags a choice that did not finish normally", () => {
    for (const finish_reason of [null, "abort", "error"]) {
      const body = chat([21], [-0.1]);
      body.choices[0]!.finish_reason = finish_reason as string;
      expect(checkCapture("chat", body, true).reasons).toEqual(["unfinished"]);
    }
  });

  it("flags missing ids and prompt ids", () => {
    const body = { ...chat([21], null), prompt_token_ids: null };
    body.choices[0]!.token_ids = null as unknown as number[];
    expect(checkCapture("chat", body, false).reasons).toEqual(["prompt_ids_missing", "token_ids_missing"]);
    expect(checkCapture("chat", { prompt_token_ids: [1], choices: [] }, false).reasons).toEqual(["no_choices"]);
  });
});
