import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { MemoryStore } from "../../store/memory.js";
import { SqliteStore } from "../../store/sqlite.js";
import type { Store } from "../../store/store.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { agentCall } from "../testing/proxy-client.js";
import { startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const stores: [string, () => Store][] = [
  ["memory", () => new MemoryStore()],
  [
    "sqlite",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "arclight-proxy-bytes-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return SqliteStore.open(join(dir, "gateway.db"));
    },
  ],
];

async function setup(makeStore: () => Store) {
  const fake = await FakeVllm.start();
  const h = await startProxyHarness({ store: makeStore(), models: [{ model: "policy", endpoint: fake.url }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  return { h, fake, rid: await h.newRollout() };
}

describe.each(stores)("proxy forwards the agent's bytes (%s store)", (_name, makeStore) => {
  it("keeps integers beyond 2^53, number spellings, escapes, spacing and key order; sets only its own fields", async () => {
    const { h, fake, rid } = await setup(makeStore);
    const text =
      '{\n  "seed": 12345678901234567890,\n  "model": "agent-model",\n  "top_p": 1.0,\n' +
      '  "messages": [{"role": "user", "content": "caf\\u00e9 \\"quoted\\" {x}"}],\n' +
      '  "temperature": 0.3, "extra_body_field": [1e2, -0.0],\n  "max_tokens": 8\n}';
    const answer = await agentCall(h, rid, "chat/completions", text);
    expect(answer.status).toBe(200);
    const expected =
      '{\n  "seed": 12345678901234567890,\n  "model": "policy",\n  "top_p": 1.0,\n' +
      '  "messages": [{"role": "user", "content": "caf\\u00e9 \\"quoted\\" {x}"}],\n' +
      '  "temperature": 1, "extra_body_field": [1e2, -0.0],\n  "max_tokens": 8,"return_token_ids":true,"logprobs":true\n}';
    expect(fake.received[0]!.text).toBe(expected);
    const [event] = await h.store.listEvents(rid, { eventType: "model_request" });
    const request = (event!.data as ModelRequestData).request as Record<string, unknown>;
    expect(Object.keys(request)).toEqual([
      "seed",
      "model",
      "top_p",
      "messages",
      "temperature",
      "extra_body_field",
      "max_tokens",
      "return_token_ids",
      "logprobs",
    ]);
    expect(request.model).toBe("policy");
  });

  it("forwards a body the proxy has nothing to add to except its fields, for completions and val mode", async () => {
    const { h, fake, rid } = await setup(makeStore);
    const text = '{"prompt":[1,2,3],"model":"x","logprobs":5,"seed":18446744073709551615}';
    const answer = await agentCall(h, rid, "completions", text, { mode: "val" });
    expect(answer.status).toBe(200);
    expect(fake.received[0]!.text).toBe(
      '{"prompt":[1,2,3],"model":"policy","logprobs":5,"seed":18446744073709551615,"temperature":0,"return_token_ids":true}',
    );
  });
});
