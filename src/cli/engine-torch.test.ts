/**
 * @module `arclight engine serve --engine torch` as a real child process on a real Hugging Face model folder: a tiny
 * Qwen2 taught (SFT through a RemoteEngine) to answer one question with a tool call, saved with `save_pretrained`,
 * then served; the chat answer comes back in vLLM's shape with the call parsed from the model's Hermes/Qwen block.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ChatTool } from "../engine/chat-template.js";
import { RemoteEngine } from "../engine/remote/remote-engine.js";
import { skipWithoutPython, testPython } from "../testing/python.js";
import { tempDir } from "../testing/temp-dir.js";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));
const children: ChildProcess[] = [];
afterEach(async () => {
  const live = children.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  for (const child of live) child.kill("SIGTERM");
  await Promise.all(live.map((child) => once(child, "exit")));
});

const tools: ChatTool[] = [{ type: "function", function: { name: "calculator", parameters: { type: "object" } } }];
const question: ChatMessage[] = [{ role: "user", content: "What is 2+2?" }];
const answer: ChatMessage = {
  role: "assistant",
  content: null,
  tool_calls: [{ type: "function", function: { name: "calculator", arguments: '{"expression": "2+2"}' } }],
};

/** Teaches the tiny model the one tool-call answer by SFT and saves it as a Hugging Face folder. */
async function taughtModelFolder(dir: string): Promise<void> {
  const engine = await RemoteEngine.start({ python: testPython()!, model: "new:qwen2-tiny", seed: 3, threads: 1 });
  try {
    const prompt = engine.chatTemplate.render(question, { tools });
    const full = engine.chatTemplate.render([...question, answer], { tools, addGenerationPrompt: false });
    expect(full.slice(0, prompt.length)).toEqual(prompt);
    const tokenIds = full.slice(0, full.lastIndexOf(engine.tokenizer.eosId) + 1); // through <|im_end|>
    const lossMask = tokenIds.map((_, t) => (t >= prompt.length ? 1 : 0));
    const row = { tokenIds, lossMask, advantages: lossMask.map(() => 0) };
    // Until the answer is memorised (loss in nats per token), at most 400 steps.
    let loss = Number.POSITIVE_INFINITY;
    for (let step = 0; step < 400 && loss > 0.01; step++)
      ({ loss } = await engine.trainStep(
        [row],
        { kind: "sft", aggregation: "token-mean" },
        { learningRate: 1e-2, weightDecay: 0, maxGradNorm: 1, microBatchSize: 1 },
      ));
    expect(loss).toBeLessThan(0.01);
    await engine.saveCheckpoint(dir);
  } finally {
    await engine.close();
  }
}

function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    child.stdout?.on("data", (data: Buffer) => {
      buffered += data.toString();
      const match = /"url":"([^"]+)"[^\n]*"msg":"engine server listening"/.exec(buffered);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code} before listening: ${buffered}`)));
  });
}

describe.skipIf(skipWithoutPython())("arclight engine serve --engine torch", () => {
  it("serves a Hugging Face folder with its chat template and parses its Qwen tool calls", async () => {
    const dir = join(tempDir("arclight-torch-serve-"), "qwen2-taught");
    await taughtModelFolder(dir);
    const argv = ["engine", "serve", "--engine", "torch", "--model", dir, "--python", testPython()!, "--port", "0"];
    const child = spawn(process.execPath, ["--import", "tsx", main, ...argv], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    const url = await listeningUrl(child);
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen2-taught", messages: question, tools, temperature: 0, max_tokens: 48 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      model: string;
      choices: {
        finish_reason: string;
        message: { tool_calls?: { function: { name: string; arguments: string } }[] };
      }[];
    };
    expect(body.model).toBe("qwen2-taught");
    expect(body.choices[0]?.finish_reason, JSON.stringify(body.choices[0])).toBe("tool_calls");
    expect(body.choices[0]?.message.tool_calls?.[0]?.function).toEqual({
      name: "calculator",
      arguments: '{"expression": "2+2"}',
    });
  }, 180_000);

  it("refuses an unknown --engine with one line naming the flag", async () => {
    const { code, stderr } = await serveFails(["--engine", "jax"]);
    expect(code).not.toBe(0);
    expect(stderr.trim()).toMatch(/^.*--engine jax: expected embedded or torch$/);
  });

  it("refuses a negative --lora-rank with one line naming the flag", async () => {
    const { code, stderr } = await serveFails(["--engine", "torch", "--lora-rank", "-3", "--python", testPython()!]);
    expect(code).toBe(2);
    expect(stderr.trim()).toBe("arclight: --lora-rank -3: expected 0 (train every weight) or a positive rank");
  });

  it("a --python that does not exist is named as the interpreter, not as a missing package", async () => {
    const { code, stderr } = await serveFails(["--engine", "torch", "--python", "/nonexistent/python3"]);
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^arclight: the torch engine's Python \/nonexistent\/python3 cannot run \(ENOENT\)/);
  });

  it("a dead --worker-url is named in the error, not --model", async () => {
    const { code, stderr } = await serveFails(["--engine", "torch", "--worker-url", "http://127.0.0.1:9"]);
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^arclight: --worker-url http:\/\/127\.0\.0\.1:9: /);
    expect(stderr).not.toContain("--model");
  });
});

/** Runs `arclight engine serve ARGS` expecting it to stop; its exit code and stderr. */
async function serveFails(args: string[]): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", main, "engine", "serve", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const [code] = (await once(child, "exit")) as [number];
  return { code, stderr };
}
