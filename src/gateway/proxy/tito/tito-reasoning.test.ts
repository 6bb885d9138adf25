/**
 * @module A `tito` model registered with a reasoning parser answers the agent with the `<think>` text split off into
 * `message.reasoning` (vLLM's shape), while the recorded `model_request` keeps every generated id, and the agent
 * sending the turn back without its reasoning still takes the prefix path.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readTokenizerFolder } from "../../../wire/tokenizer-folder.js";
import { agentCall } from "../../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../../testing/proxy-harness.js";
import { TokenVllm } from "./testing/token-vllm.js";
import { QWEN2_TOKENIZER_DIR } from "./testing/tokenizer-fixture.js";

type Json = Record<string, unknown>;
let h: ProxyHarness;
let fake: TokenVllm;
afterEach(async () => {
  await h?.close();
  await fake?.close();
});

const THINKING =
  '<think>\nAdd them.\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"expression": "2+3"}}\n</tool_call>';

describe("tito reasoning parser", () => {
  it("splits <think> text into message.reasoning; the event keeps every id; the next turn reuses them", async () => {
    fake = await TokenVllm.start(QWEN2_TOKENIZER_DIR, ({ text }) =>
      text.includes("<tool_response>") ? "5" : THINKING,
    );
    h = await startProxyHarness({
      models: [
        {
          model: "policy",
          endpoint: fake.url,
          mode: "tito",
          tokenizer: QWEN2_TOKENIZER_DIR,
          reasoning_parser: "qwen3",
        },
      ],
    });
    const rid = await h.newRollout();
    const question = { role: "user", content: "Compute 2+3." };
    const first = await agentCall(h, rid, "chat/completions", { model: "m", messages: [question] });
    expect(first.status).toBe(200);
    const choice = ((first.json as Json).choices as Json[])[0]!;
    const message = choice.message as Json;
    expect(message).toMatchObject({ content: null, reasoning: "\nAdd them.\n" });
    const call = (message.tool_calls as Json[])[0]!;
    expect(call.function).toEqual({ name: "calc", arguments: '{"expression": "2+3"}' });
    expect(choice.finish_reason).toBe("tool_calls");

    // The record keeps the whole generation: the think block's ids are trained like any other.
    const [event] = await h.store.listEvents(rid, { eventType: "model_request" });
    const recorded = (((event!.data as Json).response as Json).choices as Json[])[0]!.token_ids as number[];
    const folder = readTokenizerFolder(QWEN2_TOKENIZER_DIR);
    expect(recorded.at(-1)).toBe(folder.endOfTurn.id);
    expect(folder.tokenizer.decode(recorded.slice(0, -1), false)).toBe(THINKING);
    expect(choice.token_ids).toEqual(recorded);

    // The agent sends the turn back as most frameworks do, reasoning dropped: still the same turn.
    const assistant = { role: "assistant", content: null, tool_calls: [call] };
    const tool = { role: "tool", tool_call_id: call.id, content: "5" };
    const second = await agentCall(h, rid, "chat/completions", { model: "m", messages: [question, assistant, tool] });
    expect(((second.json as Json).choices as Json[])[0]!.message).toMatchObject({ content: "5", reasoning: null });
    const events = await h.store.listEvents(rid, { eventType: "model_request" });
    expect(events.map((e) => ((e.data as Json).tito as Json).path)).toEqual(["full", "prefix"]);
  });
});
