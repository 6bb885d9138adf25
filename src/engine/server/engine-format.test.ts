/**
 * The engine server stands on the `Tokenizer` and `ChatTemplate` interfaces: served with an engine whose tokenizer has
 * a multi-byte word id and whose template is not ChatML, it renders, stops, detokenises and parses tool calls with
 * the engine's own format (the byte tokenizer and ChatML are one implementation among others).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ChatTemplate, RenderOptions } from "../chat-template.js";
import { postJson, postSse } from "../testing/http-client.js";
import { ScriptedEngine } from "../testing/scripted-engine.js";
import type { Tokenizer } from "../tokenizer.js";
import { buildEngineServer } from "./app.js";

const WORD = "héllo";
const SPECIALS = ["<eot>", "<call>", "</call>"];
const [EOT, CALL, END_CALL, WORD_ID] = [256, 257, 258, 259];

/** Bytes 0–255, three specials (256–258) and one word id (259) whose string spans several UTF-8 bytes. */
class WordTokenizer implements Tokenizer {
  readonly vocabSize = 260;
  readonly eosId = EOT;
  encode(text: string): number[] {
    return text.split(WORD).flatMap((part, i) => [...(i > 0 ? [WORD_ID] : []), ...Buffer.from(part, "utf8")]);
  }
  decode(ids: readonly number[], skipSpecial = true): string {
    const bytes = ids.flatMap((id) => (this.isSpecial(id) && skipSpecial ? [] : this.tokenBytes(id)));
    return Buffer.from(bytes).toString("utf8");
  }
  isSpecial(id: number): boolean {
    return id >= EOT && id < WORD_ID;
  }
  tokenBytes(id: number): number[] {
    if (id < 256) return [id];
    return [...Buffer.from(id === WORD_ID ? WORD : (SPECIALS[id - 256] as string), "utf8")];
  }
}

/** `role: text` lines, then `A:`; no special ids in the prompt at all. */
class LinesTemplate implements ChatTemplate {
  readonly stopTokenIds = [EOT];
  readonly toolCalls = { startId: CALL, endId: END_CALL };
  constructor(private readonly tokenizer: Tokenizer) {}
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): number[] {
    const lines = messages.map((m) => `${m.role}: ${typeof m.content === "string" ? m.content : ""}`);
    const tools = (options.tools ?? []).map((t) => `tool: ${t.function.name}`);
    return this.tokenizer.encode(`${[...tools, ...lines].join("\n")}\nA:`);
  }
}

const tokenizer = new WordTokenizer();
const format = { tokenizer, chatTemplate: new LinesTemplate(tokenizer) };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(ids: number[]): Promise<string> {
  const app = await buildEngineServer({ engine: new ScriptedEngine(256, () => ids, format), modelName: "m" });
  closers.push(() => app.close());
  return app.listen({ port: 0, host: "127.0.0.1" });
}

const messages = [{ role: "user", content: `say ${WORD}` }];

describe("engine server over another tokenizer and chat template", () => {
  it("/tokenize renders messages with the engine's template", async () => {
    const url = await serve([]);
    const res = await postJson(url, "/tokenize", { messages });
    expect(res.body.tokens).toEqual(tokenizer.encode(`user: say ${WORD}\nA:`));
    expect(res.body.tokens).toContain(WORD_ID);
  });

  it("chat: the template's stop id ends the turn and a multi-byte id is one logprob token", async () => {
    const url = await serve([WORD_ID, ...tokenizer.encode(" ok"), EOT, ...tokenizer.encode("never")]);
    const res = await postJson(url, "/v1/chat/completions", { messages, logprobs: true });
    const choice = res.body.choices[0];
    expect(choice.message.content).toBe(`${WORD} ok`);
    expect([choice.finish_reason, choice.stop_reason]).toEqual(["stop", null]);
    expect(choice.logprobs.content.map((e: { token: string }) => e.token)).toEqual([WORD, " ", "o", "k", "<eot>"]);
  });

  it("chat stream: the text is the word's whole string, streamed with the same ids", async () => {
    const url = await serve([...tokenizer.encode("a"), WORD_ID, EOT]);
    const res = await postSse(url, "/v1/chat/completions", { messages, stream: true });
    const text = res.events.map((e) => e.choices[0]?.delta?.content ?? "").join("");
    expect(text).toBe(`a${WORD}`);
  });

  it("chat: a tool call between the template's delimiter ids is parsed, stream and non-stream", async () => {
    const call = [CALL, ...tokenizer.encode('{"name": "calc", "arguments": {"x": 1}}'), END_CALL, EOT];
    const tools = [{ type: "function", function: { name: "calc" } }];
    const url = await serve(call);
    const res = await postJson(url, "/v1/chat/completions", { messages, tools });
    expect(res.body.choices[0].finish_reason).toBe("tool_calls");
    expect(res.body.choices[0].message.tool_calls[0].function).toEqual({ name: "calc", arguments: '{"x": 1}' });
    const streamed = await postSse(url, "/v1/chat/completions", { messages, tools, stream: true });
    const calls = streamed.events.flatMap((e) => e.choices[0]?.delta?.tool_calls ?? []);
    expect(calls.map((c: { function: { name: string } }) => c.function.name)).toEqual(["calc"]);
  });
});
