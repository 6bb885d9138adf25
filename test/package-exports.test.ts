/**
 * @module The package's entry points as a user imports them (`arclight`, `arclight/agent`, `arclight/engine`): each
 * resolves through package.json's `exports` to the build in `dist/` and has the API the docs name.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Imports `specifier` in a fresh Node process from the repository root (the package importing itself by name). */
async function exportsOf(specifier: string): Promise<Record<string, string>> {
  const script = `const m = await import(${JSON.stringify(specifier)});
console.log(JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v]))));`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
  return JSON.parse(stdout) as Record<string, string>;
}

describe("package entry points", () => {
  it("arclight/engine gives the embedded engine, its config and tokenizer (docs/engine.md)", async () => {
    const engine = await exportsOf("arclight/engine");
    expect(engine).toMatchObject({
      EmbeddedEngine: "function",
      MODEL_PRESETS: "object",
      parseModelConfig: "function",
      ByteTokenizer: "function",
      BYTE_VOCAB_SIZE: "number",
      CheckpointInvalid: "function",
      initWasmBackend: "function",
    });
  }, 60_000);

  it("arclight and arclight/agent keep their entry points", async () => {
    expect(await exportsOf("arclight")).toMatchObject({ openStore: "function", agentKeyFor: "function" });
    expect(await exportsOf("arclight/agent")).toMatchObject({ emitReward: "function", fromEnv: "function" });
  }, 60_000);
});
