/**
 * A training run with the `judge` config section: a real gateway, tiny embedded engine and local controller (the
 * trainer stack), the judge built from the parsed section as `arclight train` builds it, and a scripted judge on
 * loopback answering the pointwise prompt by the task it names. The rewards the trainer trains on are the judge's;
 * a judge that keeps failing leaves the agent's own reward, a `judge` event saying why and a warning.
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { judgeOf } from "../src/cli/judge-settings.js";
import { parseTrainerConfig } from "../src/trainer/config.js";
import { runTraining } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "./support/stack.js";

/** The judge's score (of 10) per task; a task missing here gets HTTP 500 on every request. */
const SCORES: Record<string, number> = { "say a 0": 3, "say a 1": 7 };
const FAILING_TASK = "say a 2";
/** The agent's own reward (the test agent posts `input.reward`). */
const AGENT_REWARD = 0.25;

let stack: TrainerStack | undefined;
let judgeServer: Server | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  judgeServer?.closeAllConnections();
  judgeServer?.close();
  judgeServer = undefined;
});

/** An OpenAI-compatible judge: `SCORE: n` for the task in the prompt's `<task>` tags, or a 500. Records the tasks asked. */
async function startScriptedJudge(): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  judgeServer = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text) as { messages: { content: string }[] };
    const prompt = body.messages.map((m) => m.content).join("\n");
    const task = /<task>\s*([\s\S]*?)\s*<\/task>/.exec(prompt)?.[1] ?? "";
    asked.push(task);
    const score = SCORES[task];
    res.writeHead(score === undefined ? 500 : 200, { "content-type": "application/json" });
    if (score === undefined) {
      res.end(JSON.stringify({ error: { message: "judge overloaded", type: "InternalServerError", code: 500 } }));
      return;
    }
    const message = { role: "assistant", content: `The answer follows the task.\nSCORE: ${score}` };
    res.end(
      JSON.stringify({
        id: "chatcmpl-judge",
        object: "chat.completion",
        created: 0,
        model: "judge",
        choices: [{ index: 0, message, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
  judgeServer.listen(0, "127.0.0.1");
  await once(judgeServer, "listening");
  return { url: `http://127.0.0.1:${(judgeServer.address() as AddressInfo).port}/v1`, asked };
}

describe("training with the judge config section", () => {
  it("trains on the judge's scores; a failing judge leaves the agent's reward, a judge event and a warning", async () => {
    const judge = await startScriptedJudge();
    stack = await startTrainerStack();
    const config = parseTrainerConfig({
      name: "judged",
      train_batch_size: 3,
      n: 2,
      total_steps: 2,
      rollout_timeout_seconds: 60,
      controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
      aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 96 },
      checkpoint_interval: 0,
      val_interval: 0,
      pause_retry_after_seconds: 0,
      judge: {
        enabled: true,
        base_url: judge.url,
        model: "judge",
        task_field: "prompt",
        combine: "replace",
        max_attempts: 2,
        timeout_seconds: 10,
      },
    });
    const warnings: string[] = [];
    const logger = pino(
      { level: "warn" },
      new Writable({
        write(chunk, _encoding, done) {
          warnings.push(String(chunk));
          done();
        },
      }),
    );
    const tasks = ["say a 0", "say a 1", FAILING_TASK];
    const runDir = join(stack.dir, "runs", "judged");
    const summary = await runTraining({
      config,
      client: stack.client,
      engine: stack.engine,
      serving: stack.serving,
      trainData: tasks.map((prompt, index) => ({ index, input: { prompt, turns: 1, reward: AGENT_REWARD } })),
      runDir,
      logger,
      pollIntervalMs: 20,
      judge: judgeOf(config.judge, {}),
    });
    expect(summary.steps).toBe(2);

    // 1. Each judged rollout's final reward is the judge's score / 10 (combine: replace), written as events.
    for (const epoch of [0, 1]) {
      for (const [index, task] of tasks.entries()) {
        for (const sample of [0, 1]) {
          const id = `judged-e${epoch}-d${index}-${sample}`;
          const rewards = (await stack.client.getEvents(id, { eventType: "reward" })).map((e) => e.data.value);
          const [verdict] = (await stack.client.getEvents(id, { eventType: "judge" })).map((e) => e.data);
          const score = SCORES[task];
          if (score !== undefined) {
            expect(rewards, id).toEqual([AGENT_REWARD, score / 10]);
            expect(verdict, id).toMatchObject({ judged_reward: score / 10, agent_reward: AGENT_REWARD });
            expect(verdict?.final_reward).toBeCloseTo(score / 10, 12);
          } else {
            // 2. The failing judge: no judged reward, the agent's own kept, the error and attempts recorded.
            expect(rewards, id).toEqual([AGENT_REWARD]);
            expect(verdict, id).toMatchObject({ mode: "pointwise", model: "judge", attempts: 2 });
            expect(String(verdict?.error)).toMatch(/500/);
          }
        }
      }
    }
    // Two requests per answered task a step (one per rollout), max_attempts per rollout of the failing one.
    expect(judge.asked.filter((t) => t === "say a 0")).toHaveLength(4);
    expect(judge.asked.filter((t) => t === FAILING_TASK)).toHaveLength(2 * 2 * 2);

    // 3. The trainer trained on those rewards: each step's mean is over 0.3, 0.3, 0.7, 0.7, 0.25, 0.25; the judge's
    // events are not counted as rewards that came too late.
    const metrics = readFileSync(join(runDir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, number | null>);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m["rollouts/trained"]).toBe(6);
      expect(m["reward/mean"]).toBeCloseTo((0.3 * 2 + 0.7 * 2 + AGENT_REWARD * 2) / 6, 12);
      expect(m.late_rewards_missed).toBe(0);
    }
    const judgeWarnings = warnings.filter((line) => line.includes("judge gave some rollouts no reward"));
    expect(judgeWarnings).toHaveLength(2);
    expect(JSON.parse(judgeWarnings[0] as string)).toMatchObject({ errors: 2 });
  }, 180_000);
});
