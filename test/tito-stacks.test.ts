/**
 * Real LangChain.js and Vercel AI SDK agents (test/fixtures/tito), each a child process running a three-step calc
 * tool loop against a fake vLLM that tokenises with the repository's real BPE tokenizer and Qwen2-style template:
 * through `tito` every rollout aggregates into one trajectory row; through `passthrough` the frameworks' re-serialised
 * tool arguments split them (what `tito` exists to fix).
 */
import { afterEach, describe, expect, it } from "vitest";
import { calcModel, rowsPerRollout, runStack, type Stack } from "../src/gateway/proxy/tito/testing/stack-rollouts.js";
import { TokenVllm } from "../src/gateway/proxy/tito/testing/token-vllm.js";
import { QWEN2_TOKENIZER_DIR } from "../src/gateway/proxy/tito/testing/tokenizer-fixture.js";
import { type ProxyHarness, startProxyHarness } from "../src/gateway/testing/proxy-harness.js";
import type { ProxyModelMode } from "../src/protocol/index.js";

let fake: TokenVllm | undefined;
let h: ProxyHarness | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
});

async function rows(stack: Stack, mode: ProxyModelMode): Promise<{ rows: number[]; calls: number[] }> {
  fake = await TokenVllm.start(QWEN2_TOKENIZER_DIR, calcModel);
  const tito = mode === "tito" ? { mode, tokenizer: QWEN2_TOKENIZER_DIR } : {};
  h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url, ...tito }] });
  const { rolloutIds, results } = await runStack(h, stack, 2);
  expect(results.map((r) => r.text)).toEqual(["The result is 15.", "The result is 15."]);
  return { rows: await rowsPerRollout(h.store, rolloutIds), calls: results.map((r) => r.calls) };
}

describe.each<Stack>(["langchain", "ai-sdk"])("%s multi-turn tool agent", (stack) => {
  it("tito: four calls (three tool turns) per rollout, one trajectory row each", async () => {
    const run = await rows(stack, "tito");
    expect(run.calls).toEqual([4, 4]);
    expect(run.rows).toEqual([1, 1]);
  }, 120_000);

  it("passthrough: the same rollouts split into several rows", async () => {
    const run = await rows(stack, "passthrough");
    expect(run.calls).toEqual([4, 4]);
    for (const n of run.rows) expect(n).toBeGreaterThan(1);
  }, 120_000);
});
