/**
 * The engine server serving more models by name beside the base one (a policy per agent), against REAL embedded
 * engines (tiny config, different seeds, so each engine's greedy tokens are its own): routing by `model`, the policy
 * version of the engine that answered, `/v1/models` in vLLM's LoRA card shape, one admission gate for all.
 */
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../testing/temp-dir.js";
import { EmbeddedEngine } from "../embedded/engine.js";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { postJson, postSse } from "../testing/http-client.js";
import { buildEngineServer } from "./app.js";

const tokenizer = new ByteTokenizer();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A tiny embedded engine, disposed after the test. */
async function engine(seed: number): Promise<EmbeddedEngine> {
  const created = await EmbeddedEngine.create({ config: "tiny", seed });
  closers.push(async () => created.dispose());
  return created;
}

/** A server of `base` (seed 7) with the adapters `policy-writer` (seed 8) and `policy-rewriter` (seed 9). */
async function start() {
  const [base, writer, rewriter] = [await engine(7), await engine(8), await engine(9)];
  const app = await buildEngineServer({
    engine: base,
    modelName: "base",
    adapters: [
      { modelName: "policy-writer", engine: writer },
      { modelName: "policy-rewriter", engine: rewriter },
    ],
    checkpointRoot: tmpdir(),
  });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  closers.unshift(() => app.close());
  return { url, base, writer, rewriter };
}

const prompt = [...tokenizer.encode("Hello")];
/** A greedy completion of `prompt` from `model` (omitted: no `model` field). */
const greedy = (model?: string) => ({
  ...(model === undefined ? {} : { model }),
  prompt,
  max_tokens: 8,
  temperature: 0,
  return_token_ids: true,
});

/** The greedy tokens `engine` itself generates for `prompt`. */
async function expectedIds(from: EmbeddedEngine): Promise<number[]> {
  const sampling = { temperature: 0, topP: 1, topK: 0, maxTokens: 8, stopTokenIds: [tokenizer.eosId], stop: [] };
  const [result] = await from.generate([{ promptTokenIds: prompt, sampling }]);
  return result!.tokenIds;
}

describe("engine server with adapters served by name", () => {
  it("runs each request on the engine its model names; the base name or no model runs on the base engine", async () => {
    const { url, base, writer, rewriter } = await start();
    const cases = [
      [undefined, base, "base"],
      ["base", base, "base"],
      ["policy-writer", writer, "policy-writer"],
      ["policy-rewriter", rewriter, "policy-rewriter"],
    ] as const;
    for (const [model, from, name] of cases) {
      const answer = await postJson(url, "/v1/completions", greedy(model));
      expect(answer.status).toBe(200);
      expect(answer.body.model).toBe(name);
      expect(answer.body.choices[0].token_ids).toEqual(await expectedIds(from));
    }
    // The seeds differ, so the routing is visible in the tokens themselves.
    expect(await expectedIds(writer)).not.toEqual(await expectedIds(rewriter));
  });

  it("chat answers, streamed or not, come from the named engine", async () => {
    const { url, rewriter } = await start();
    const messages = [{ role: "user", content: "Hi" }];
    const body = { model: "policy-rewriter", messages, max_tokens: 6, temperature: 0, return_token_ids: true };
    const whole = await postJson(url, "/v1/chat/completions", body);
    expect(whole.body.model).toBe("policy-rewriter");
    const sampling = { temperature: 0, topP: 1, topK: 0, maxTokens: 6, stopTokenIds: [], stop: [] };
    const stops = { ...sampling, stopTokenIds: [...rewriter.chatTemplate.stopTokenIds] };
    const [expected] = await rewriter.generate([{ promptTokenIds: whole.body.prompt_token_ids, sampling: stops }]);
    expect(whole.body.choices[0].token_ids).toEqual(expected!.tokenIds);
    const streamed = await postSse(url, "/v1/chat/completions", { ...body, stream: true });
    expect(streamed.done).toBe(true);
    expect(streamed.events.every((chunk) => chunk.model === "policy-rewriter")).toBe(true);
  });

  it("answers carry the policy version of the engine that generated them, in the header and the body", async () => {
    const { url, writer } = await start();
    // The writer's weights move to version 1 (its own checkpoint reloaded); the base and the rewriter stay at 0.
    const dir = tempDir("arclight-adapter-ckpt-");
    await writer.saveCheckpoint(dir);
    await writer.loadCheckpoint(dir);
    for (const [model, version] of [
      ["policy-writer", 1],
      ["policy-rewriter", 0],
      ["base", 0],
    ] as const) {
      const answer = await postJson(url, "/v1/completions", greedy(model));
      expect(answer.headers.get("x-policy-version")).toBe(String(version));
      expect(answer.body.policy_version).toBe(version);
      const streamed = await postSse(url, "/v1/completions", { ...greedy(model), stream: true });
      expect(streamed.headers.get("x-policy-version")).toBe(String(version));
    }
  });

  it("generates for different models concurrently, each answer from its own engine", async () => {
    const { url, writer, rewriter } = await start();
    const answers = await Promise.all(
      ["policy-writer", "policy-rewriter", "policy-writer"].map((model) =>
        postJson(url, "/v1/completions", greedy(model)),
      ),
    );
    const [fromWriter, fromRewriter] = [await expectedIds(writer), await expectedIds(rewriter)];
    expect(answers.map((a) => a.body.choices[0].token_ids)).toEqual([fromWriter, fromRewriter, fromWriter]);
  });

  it("lists the base card, then each adapter in vLLM's LoRA card shape (parent: the base model)", async () => {
    const { url } = await start();
    const res = await fetch(`${url}/v1/models`);
    const body = (await res.json()) as { object: string; data: { created: number }[] };
    const created = body.data[0]!.created;
    const adapter = (id: string) => ({
      id,
      object: "model",
      created,
      owned_by: "arclight",
      root: id,
      parent: "base",
      max_model_len: null,
      permission: [],
    });
    expect(body).toEqual({
      object: "list",
      data: [
        {
          id: "base",
          object: "model",
          created,
          owned_by: "arclight",
          root: "base",
          parent: null,
          max_model_len: 256,
          permission: [],
        },
        adapter("policy-writer"),
        adapter("policy-rewriter"),
      ],
    });
  });

  it("answers a name it does not serve with vLLM's 404", async () => {
    const { url } = await start();
    const answer = await postJson(url, "/v1/chat/completions", {
      model: "policy-reader",
      messages: [{ role: "user", content: "x" }],
    });
    expect(answer.status).toBe(404);
    expect(answer.body.error).toEqual({
      message: "The model `policy-reader` does not exist.",
      type: "NotFoundError",
      param: "model",
      code: 404,
    });
  });

  it("pause holds requests to every model until resume", async () => {
    const { url } = await start();
    await postJson(url, "/pause", {});
    let answered = 0;
    const held = ["policy-writer", "base"].map((model) =>
      postJson(url, "/v1/completions", greedy(model)).then((res) => {
        answered++;
        return res;
      }),
    );
    // Other routes keep answering while generation is paused; three round trips give the held requests time to arrive.
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/v1/models`)).status).toBe(200);
    expect(answered).toBe(0);
    await postJson(url, "/resume", {});
    expect((await Promise.all(held)).map((res) => res.status)).toEqual([200, 200]);
  });

  it("load_weights swaps the base engine only: an adapter keeps its weights and version", async () => {
    const { url, writer } = await start();
    const other = await engine(10);
    const dir = tempDir("arclight-adapter-base-ckpt-");
    await other.saveCheckpoint(dir);
    const load = await postJson(url, "/v1/load_weights", { path: dir });
    expect(load.body).toEqual({ status: "ok", policy_version: 1 });
    const base = await postJson(url, "/v1/completions", greedy("base"));
    expect(base.body.choices[0].token_ids).toEqual(await expectedIds(other));
    const adapter = await postJson(url, "/v1/completions", greedy("policy-writer"));
    expect(adapter.body.policy_version).toBe(0);
    expect(adapter.body.choices[0].token_ids).toEqual(await expectedIds(writer));
  });

  it("refuses an adapter name given twice or equal to the base model's at build time", async () => {
    const [base, other] = [await engine(7), await engine(8)];
    const twice = buildEngineServer({
      engine: base,
      modelName: "base",
      adapters: [
        { modelName: "policy-writer", engine: other },
        { modelName: "policy-writer", engine: other },
      ],
    });
    await expect(twice).rejects.toThrow("adapter model name policy-writer is given twice");
    const shadow = buildEngineServer({
      engine: base,
      modelName: "base",
      adapters: [{ modelName: "base", engine: other }],
    });
    await expect(shadow).rejects.toThrow("adapter model name base is the base model's name");
  });
});
