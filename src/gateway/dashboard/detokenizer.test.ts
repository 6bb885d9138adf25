import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../engine/embedded/engine.js";
import { buildEngineServer } from "../../engine/server/app.js";
import { MemoryStore } from "../../store/memory.js";
import { Detokenizer, serverRoot } from "./detokenizer.js";

let engine: EmbeddedEngine;
let server: Awaited<ReturnType<typeof buildEngineServer>>;
let url: string;

beforeAll(async () => {
  engine = await EmbeddedEngine.create({ config: "tiny", seed: 0 });
  server = await buildEngineServer({ engine, modelName: "policy" });
  url = await server.listen({ host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await server.close();
  engine.dispose();
});

/** A store with `policy` served by the tiny engine (plus any extra endpoints). */
async function storeWith(endpoints: string[]) {
  const store = new MemoryStore();
  await store.upsertModels(endpoints.map((endpoint) => ({ model: "policy", endpoint, version: 0 })));
  return store;
}

/** What the engine's own /detokenize answers for one id. */
async function direct(id: number): Promise<string> {
  const res = await fetch(`${url}/detokenize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tokens: [id] }),
  });
  return ((await res.json()) as { prompt: string }).prompt;
}

describe("Detokenizer", () => {
  it("decodes each id through the model's registered server, as its /detokenize does", async () => {
    const detokenizer = new Detokenizer(await storeWith([`${url}/v1`]));
    const texts = await detokenizer.texts("policy", [97, 98, 10, 97]);
    expect(texts).toEqual({ 97: await direct(97), 98: await direct(98), 10: await direct(10) });
  });

  it("answers from its cache once an id is known (the server is gone)", async () => {
    const store = await storeWith([`${url}/v1`]);
    const detokenizer = new Detokenizer(store);
    await detokenizer.texts("policy", [99]);
    await store.deleteModels();
    expect(await detokenizer.texts("policy", [99])).toEqual({ 99: await direct(99) });
  });

  it("decodes through a live server registered after a dead one (a finished run's engine), sorted first", async () => {
    const detokenizer = new Detokenizer(await storeWith(["http://127.0.0.1:1/v1", `${url}/v1`]));
    expect(await detokenizer.texts("policy", [97, 98])).toEqual({ 97: await direct(97), 98: await direct(98) });
  });

  it("returns nothing for a model without a server, or a server that does not answer", async () => {
    expect(await new Detokenizer(new MemoryStore()).texts("policy", [1])).toEqual({});
    const dead = new Detokenizer(await storeWith(["http://127.0.0.1:9/v1"]));
    expect(await dead.texts("policy", [1])).toEqual({});
  });
});

describe("serverRoot", () => {
  it("drops a trailing /v1 and slashes", () => {
    expect(serverRoot("http://h:8000/v1/")).toBe("http://h:8000");
    expect(serverRoot("http://h:8000")).toBe("http://h:8000");
  });
});
