/**
 * A `tito` upstream answering an id its tokenizer folder cannot decode: a model whose output layer is larger than its
 * tokenizer (Qwen2.5: 151,936 rows, 151,665 tokens) may sample a padding id, and a folder that is not the served
 * model's gives ids past its end. The call is an unusable answer, recorded and answered 502, never a bare 500 that
 * loses the capture.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readTokenizerFolder } from "../../../wire/tokenizer-folder.js";
import { agentCall } from "../../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../../testing/proxy-harness.js";
import { type ScriptedUpstream, startScriptedUpstream } from "../../testing/scripted-upstream.js";
import { QWEN2_TOKENIZER_DIR } from "./testing/tokenizer-fixture.js";

const closers: (ProxyHarness | ScriptedUpstream)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c.close()));
});

describe("tito with an id outside the tokenizer folder's vocabulary", () => {
  it("records the call as status error (token_ids_undecodable) and answers the agent 502", async () => {
    const folder = readTokenizerFolder(QWEN2_TOKENIZER_DIR);
    const padding = folder.tokenizer.vocabSize + 17;
    const ids = [40, padding, folder.endOfTurn.id];
    // vLLM v0.19's /v1/completions shape with return_token_ids.
    const upstream = await startScriptedUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "cmpl-1",
          object: "text_completion",
          created: 1_760_000_000,
          model: "policy",
          choices: [
            {
              index: 0,
              text: "I",
              logprobs: { text_offset: [], token_logprobs: [-0.5, -9.1, -0.2], tokens: [], top_logprobs: null },
              finish_reason: "stop",
              stop_reason: null,
              token_ids: ids,
              prompt_logprobs: null,
              prompt_token_ids: [1, 2, 3],
            },
          ],
          usage: { prompt_tokens: 3, total_tokens: 6, completion_tokens: 3 },
        }),
      );
    });
    closers.push(upstream);
    const h = await startProxyHarness({
      models: [{ model: "policy", endpoint: upstream.url, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR }],
    });
    closers.push(h);
    const rolloutId = await h.newRollout();

    const res = await agentCall(h, rolloutId, "chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    });

    expect(res.status).toBe(502);
    const detail = (res.json as { detail: string }).detail;
    expect(detail).toMatch(/^Upstream of model policy answered ids the tokenizer folder cannot decode: /);
    expect(detail).toContain(`token id ${padding} is outside the vocabulary`);
    const events = await h.store.listEvents(rolloutId, { eventType: "model_request" });
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      status: "error",
      http_status: 502,
      capture_incomplete: true,
      capture_incomplete_reasons: ["token_ids_undecodable"],
      error: { code: "upstream_bad_answer" },
    });
  });
});
