/** `arclight eval` as a real child process: what it says about the agent it runs. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import { tempDir } from "../testing/temp-dir.js";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));
const valPath = fileURLToPath(new URL("../../examples/calculator/data/val.jsonl", import.meta.url));

async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (data: Buffer) => {
    stdout += data.toString();
  });
  child.stderr.on("data", (data: Buffer) => {
    stderr += data.toString();
  });
  const [code] = await once(child, "exit");
  return { code, stdout, stderr };
}

describe("arclight eval", () => {
  it("says on stderr that it runs the bundled calculator agent when no --config is given", async () => {
    const dir = join(tempDir("arclight-eval-test-"), "policy");
    const engine = await EmbeddedEngine.create({ config: "tiny", seed: 1 });
    await engine.saveCheckpoint(dir);
    engine.dispose();
    const result = await cli(["eval", dir, "--data", valPath, "--limit", "1", "--pool-size", "1"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^arclight eval: 1 inputs from .*: reward \d\.\d{3}/m);
    expect(result.stderr).toContain(
      "arclight eval: no --config: running the bundled calculator agent (examples/calculator/train.yaml); " +
        "give --config YOUR_TRAIN.yaml to run your own agent",
    );
  }, 120_000);
});
