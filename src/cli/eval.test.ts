/** `arclight eval` as a real child process: what it says about the agent it runs. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
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

  it("runs a --config's agent script named relative to the config file, from another working directory", async () => {
    const root = tempDir("arclight-eval-paths-");
    const dir = join(root, "policy");
    const engine = await EmbeddedEngine.create({ config: "tiny", seed: 1 });
    await engine.saveCheckpoint(dir);
    engine.dispose();
    // An agent that ends without a model call: its rollout succeeds when node finds the script, fails when not.
    writeFileSync(join(root, "agent.mjs"), "process.exit(0);\n");
    writeFileSync(join(root, "eval.yaml"), "controller:\n  command: [node, agent.mjs]\n");
    const result = await cli(["eval", dir, "--data", valPath, "--limit", "1", "--config", join(root, "eval.yaml")]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/: reward 0\.000, solved \(reward >= 1\) 0\.0%, failed rollouts 0$/m);
  }, 120_000);

  it("builds the config's embedded engine from --preset, as arclight train does", async () => {
    const root = tempDir("arclight-eval-preset-");
    // One model call with a 400-byte prompt: past the tiny preset's 256-token context, within the agent preset's.
    writeFileSync(
      join(root, "agent.mjs"),
      [
        "const response = await fetch(process.env.AGL_OPENAI_BASE_URL + '/chat/completions', {",
        '  method: "POST",',
        '  headers: { "content-type": "application/json", authorization: "Bearer " + process.env.AGL_KEY },',
        '  body: JSON.stringify({ model: "policy", max_tokens: 1, messages: [{ role: "user", content: "x".repeat(400) }] }),',
        "});",
        "if (!response.ok) { console.error(await response.text()); process.exit(1); }",
      ].join("\n"),
    );
    writeFileSync(
      join(root, "eval.yaml"),
      `data: { train_path: ${JSON.stringify(valPath)} }\ncontroller:\n  command: [node, agent.mjs]\n`,
    );
    const config = join(root, "eval.yaml");
    const tiny = await cli(["eval", config, "--split", "train", "--limit", "1"]);
    expect(tiny.code).toBe(1);
    expect(tiny.stderr).toContain("maximum context length is 256 tokens");
    const agent = await cli(["eval", config, "--split", "train", "--limit", "1", "--preset", "agent"]);
    expect(agent.code, agent.stderr).toBe(0);
    expect(agent.stdout).toMatch(/failed rollouts 0$/m);
    const bad = await cli(["eval", config, "--preset", "agent", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--preset: only for the config's engine");
    const noFrozen = await cli(["eval", config, "--engine-seed", "2", "--checkpoint", root]);
    expect(noFrozen.code).not.toBe(0);
    expect(noFrozen.stderr).toContain(
      "--engine-seed: with --checkpoint it builds the starting weights of agents.frozen",
    );
  }, 120_000);

  it("serves a --checkpoint's frozen agents the config's starting weights, as training does", async () => {
    const root = tempDir("arclight-eval-frozen-");
    const checkpoint = join(root, "trained");
    const trained = await EmbeddedEngine.create({ config: "tiny", seed: 1 });
    await trained.saveCheckpoint(checkpoint);
    trained.dispose();
    // The writer and the frozen checker answer one prompt greedily; reward 1 when their answers differ.
    writeFileSync(
      join(root, "agent.mjs"),
      [
        "const ask = async (role) => {",
        "  const base = process.env.AGL_OPENAI_BASE_URL.replace(/\\/openai\\/v1\\/?$/, '/agent/' + role + '/openai/v1');",
        "  const response = await fetch(base + '/chat/completions', {",
        '    method: "POST",',
        '    headers: { "content-type": "application/json", authorization: "Bearer " + process.env.AGL_KEY },',
        '    body: JSON.stringify({ model: "policy", max_tokens: 8, temperature: 0, messages: [{ role: "user", content: "2+2" }] }),',
        "  });",
        "  if (!response.ok) throw new Error(await response.text());",
        "  return (await response.json()).choices[0].message.content;",
        "};",
        'const differ = (await ask("writer")) !== (await ask("checker"));',
        "await fetch(process.env.AGL_EVENT_URL, {",
        '  method: "POST",',
        '  headers: { "content-type": "application/json", authorization: "Bearer " + process.env.AGL_KEY },',
        '  body: JSON.stringify({ event_type: "reward", data: { value: differ ? 1 : 0 } }),',
        "});",
      ].join("\n"),
    );
    const yaml = `data: { train_path: ${JSON.stringify(valPath)} }\ncontroller:\n  command: [node, agent.mjs]\nagents: { frozen: [checker] }\n`;
    writeFileSync(join(root, "eval.yaml"), yaml);
    const args = ["eval", join(root, "eval.yaml"), "--split", "train", "--limit", "1"];
    // The checkpoint (seed 1) answers the writer, the starting weights (seed 0) the checker.
    const withCheckpoint = await cli([...args, "--checkpoint", checkpoint]);
    expect(withCheckpoint.code, withCheckpoint.stderr).toBe(0);
    expect(withCheckpoint.stdout).toMatch(/: reward 1\.000, .* failed rollouts 0$/m);
    // The config's own engine is the starting weights: both roles answer alike.
    const fresh = await cli(args);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toMatch(/: reward 0\.000, .* failed rollouts 0$/m);
  }, 120_000);
});
