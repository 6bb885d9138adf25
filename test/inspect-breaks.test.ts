/**
 * `arclight inspect` (a child process) on a rollout whose second call re-renders the first answer's JSON (`": "` became
 * `":"`): the break is shown as decoded text on both sides, through a live engine registered after a dead one.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { buildEngineServer } from "../src/engine/server/app.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { type FixtureCall, seedTraceRollout } from "../src/gateway/testing/trace-fixture.js";

const exec = promisify(execFile);
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));

/** The byte tokenizer's ids of a text (the tiny engine's vocabulary: one id per UTF-8 byte). */
const bytes = (text: string) => Array.from(Buffer.from(text, "utf8"));
function call(prompt: string, response: string): FixtureCall {
  const responseIds = bytes(response);
  return {
    promptIds: bytes(prompt),
    responseIds,
    texts: responseIds.map((id) => String.fromCharCode(id)),
    logprobs: responseIds.map(() => -0.5),
  };
}

let gw: TestGateway;
let engine: EmbeddedEngine;
let server: Awaited<ReturnType<typeof buildEngineServer>>;
beforeEach(async () => {
  engine = await EmbeddedEngine.create({ config: "tiny", seed: 0 });
  server = await buildEngineServer({ engine, modelName: "policy" });
  const url = await server.listen({ host: "127.0.0.1", port: 0 });
  gw = await startTestGateway();
  // A finished run's engine, gone, stays registered (and sorts) before the live one.
  const models = [
    { model: "policy", endpoint: "http://127.0.0.1:1/v1" },
    { model: "policy", endpoint: `${url}/v1` },
  ];
  expect((await gw.call("POST", "/api/models", models)).status).toBe(201);
  await seedTraceRollout(
    gw.store,
    "r",
    [call('Weather? {"city', '": "Paris"}'), call('Weather? {"city":"Paris"} Sunny. Tomorrow?', "Rain")],
    1,
  );
});
afterEach(async () => {
  await gw.close();
  await server.close();
  engine.dispose();
});

describe("arclight inspect merge breaks", () => {
  it("shows the decoded text on both sides of the first difference, in the JSON and on stderr", async () => {
    const flags = ["--gateway-url", gw.url];
    const { stdout, stderr } = await exec(
      process.execPath,
      ["--import", import.meta.resolve("tsx"), MAIN, "inspect", "r", ...flags],
      { timeout: 60_000, env: { ...process.env, ARCLIGHT_KEY: "test-key" } },
    );
    const report = JSON.parse(stdout) as { mismatches: unknown[]; rows: { mismatches: unknown[] }[] };
    const position = 'Weather? {"city":'.length;
    const expected = {
      turn: 1,
      position,
      kind: "token_differs",
      shared_ids: bytes('er? {"city":'),
      row_ids: bytes(' "Paris"}'),
      prompt_ids: bytes('"Paris"} Sun'),
      shared_text: 'er? {"city":',
      row_text: ' "Paris"}',
      prompt_text: '"Paris"} Sun',
    };
    expect(report.mismatches).toEqual([expected]);
    expect(report.rows.map((row) => row.mismatches)).toEqual([[], [expected]]);
    expect(stderr.trim()).toBe(
      `arclight inspect: turn 1 breaks the row at token ${position}, after "er? {\\"city\\":": ` +
        'row " \\"Paris\\"}", prompt "\\"Paris\\"} Sun"',
    );
  });
});
