/**
 * @module The calculator agent: a plain `openai`-SDK script that answers one arithmetic question with a
 * `calculator` tool, scores itself, and posts the reward. Run inside a rollout (the controller sets the environment),
 * or by hand: `QUESTION="12+7*3" ANSWER=33 AGL_OPENAI_BASE_URL=… AGL_KEY=… AGL_EVENT_URL=… npx tsx agent.ts`.
 *
 * Environment:
 * | name | required | meaning |
 * |---|---|---|
 * | `QUESTION` | yes | the problem text (controller `env_map`: `QUESTION: input.question`) |
 * | `ANSWER` | yes | the expected number (`env_map`: `ANSWER: input.answer`) |
 * | `AGL_OPENAI_BASE_URL` | yes | OpenAI-compatible base URL (the gateway proxy of this rollout attempt) |
 * | `AGL_KEY` | yes | API key, sent to the model and to the event URL |
 * | `AGL_EVENT_URL` | yes | where the `reward` event is POSTed |
 * | `AGL_ROLLOUT_ID`, `AGL_ATTEMPT_ID` | no | make the reward's `event_id` stable, so a retried post stores one event |
 * | `CALC_MODEL` | no | model name sent (default `policy`; the gateway substitutes its own) |
 * | `CALC_MAX_TURNS` | no | most model calls per question (default 3) |
 * | `CALC_MAX_TOKENS` | no | `max_tokens` per model call (default: not sent, so the server allows the rest of the context) |
 * | `CALC_DESCRIBED_TOOL` | no | `1`: offer the tool with description and JSON schema (for general-purpose LLMs) |
 * | `CALC_SYSTEM_PROMPT` | no | a system message (none by default: the tiny policy's context is ~256 tokens) |
 *
 * Exit codes: 0 when the question was worked through and the reward posted, whatever the reward; 1 on a real error
 * (model unreachable, reward not accepted); 2 on a missing or bad environment variable. The same run is the
 * `calculatorRollout` export, for a controller's `agent_class` (the demo runs it so, in reused processes).
 */
import { createHash, randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { CALCULATOR_TOOL, CALCULATOR_TOOL_DESCRIBED, runToolCall } from "./calculator-tool.js";
import { computeReward, type RewardResult } from "./reward.js";

/** The agent's settings, read once from the environment. */
interface AgentConfig {
  question: string;
  expected: number;
  baseURL: string;
  apiKey: string;
  eventUrl: string;
  eventId: string;
  model: string;
  maxTurns: number;
  /** `max_tokens` of each call; undefined: not sent (an OpenAI-compatible server then allows the rest of the context). */
  maxTokens: number | undefined;
  tool: ChatCompletionTool;
  systemPrompt: string | undefined;
}

/** A missing or malformed environment variable (exit code 2). */
class ConfigError extends Error {}

/** The event endpoint refused the reward with a 4xx (not retried). */
class RewardRejected extends Error {}

/** What one worked question produced. */
interface Outcome {
  finalContent: string | null;
  toolUsed: boolean;
  modelCalls: number;
  /** Why the conversation stopped early, when it did. */
  stopped?: string;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === "") throw new ConfigError(`environment variable ${name} is required`);
  return value;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(`${name} must be a positive integer, got "${text}"`);
  return value;
}

/** The longest `event_id` the gateway takes (`POST …/events`); a rollout id alone may be nearly that long. */
const MAX_EVENT_ID_LENGTH = 200;

/**
 * The reward's `event_id`, the same for every post of one rollout attempt (a retried post stores one event):
 * `reward-ROLLOUT-ATTEMPT`, or `reward-` and the SHA-256 of the two when that is longer than the gateway takes.
 */
function rewardEventId(rolloutId: string, attemptId: string): string {
  const readable = `reward-${rolloutId}-${attemptId}`;
  if (readable.length <= MAX_EVENT_ID_LENGTH) return readable;
  return `reward-${createHash("sha256").update(`${rolloutId}\n${attemptId}`).digest("hex")}`;
}

/** Reads and checks the environment (see the module table). */
function readConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const expectedText = required(env, "ANSWER");
  const expected = Number(expectedText);
  if (!Number.isFinite(expected)) throw new ConfigError(`ANSWER must be a number, got "${expectedText}"`);
  const rolloutId = env.AGL_ROLLOUT_ID;
  const attemptId = env.AGL_ATTEMPT_ID;
  return {
    question: required(env, "QUESTION"),
    expected,
    baseURL: required(env, "AGL_OPENAI_BASE_URL"),
    apiKey: required(env, "AGL_KEY"),
    eventUrl: required(env, "AGL_EVENT_URL"),
    eventId: rolloutId && attemptId ? rewardEventId(rolloutId, attemptId) : `reward-${randomUUID()}`,
    model: env.CALC_MODEL || "policy",
    maxTurns: positiveInt(env, "CALC_MAX_TURNS", 3),
    // No default cap: a fixed max_tokens plus a long second-turn prompt can exceed the tiny policy's 256-token
    // context, and a server with vLLM's rules rejects that call (400) instead of shortening it.
    maxTokens: env.CALC_MAX_TOKENS ? positiveInt(env, "CALC_MAX_TOKENS", 1) : undefined,
    tool: env.CALC_DESCRIBED_TOOL === "1" ? CALCULATOR_TOOL_DESCRIBED : CALCULATOR_TOOL,
    systemPrompt: env.CALC_SYSTEM_PROMPT || undefined,
  };
}

/**
 * Works one question: ask the model; while it calls tools, run them and send each result back (role `tool`, with
 * its `tool_call_id`); stop at the first reply without tool calls, or after `maxTurns` model calls. A 400 on a later
 * call (the tiny model's own output overflowing its context) ends the conversation unanswered instead of failing it.
 */
async function solve(client: OpenAI, config: AgentConfig): Promise<Outcome> {
  const messages: ChatCompletionMessageParam[] = [];
  if (config.systemPrompt) messages.push({ role: "system", content: config.systemPrompt });
  messages.push({ role: "user", content: config.question });
  let toolUsed = false;
  for (let call = 1; call <= config.maxTurns; call += 1) {
    let completion: OpenAI.ChatCompletion;
    try {
      completion = await client.chat.completions.create({
        model: config.model,
        messages,
        tools: [config.tool],
        ...(config.maxTokens === undefined ? {} : { max_tokens: config.maxTokens }),
      });
    } catch (err) {
      if (call > 1 && err instanceof OpenAI.BadRequestError) {
        return { finalContent: null, toolUsed, modelCalls: call, stopped: `model call ${call} rejected (400)` };
      }
      throw err;
    }
    const message = completion.choices[0]?.message;
    if (!message) throw new Error(`model call ${call} returned no choices`);
    const toolCalls = (message.tool_calls ?? []).filter((c) => c.type === "function");
    if (toolCalls.length === 0) return { finalContent: message.content, toolUsed, modelCalls: call };
    // Send back exactly what the model produced (content and arguments verbatim) so the next prompt re-renders its ids.
    messages.push({
      role: "assistant",
      content: message.content,
      tool_calls: toolCalls.map(({ id, function: fn }) => ({ id, type: "function", function: fn })),
    });
    for (const toolCall of toolCalls) {
      const result = runToolCall(toolCall.function.name, toolCall.function.arguments);
      toolUsed ||= !result.startsWith("error:");
      messages.push({ role: "tool", tool_call_id: toolCall.id, content: result });
    }
  }
  return { finalContent: null, toolUsed, modelCalls: config.maxTurns, stopped: "no answer within the turn limit" };
}

/**
 * Posts the reward as a `reward` event (`{event_type, data: {value, source, reason}, event_id}`) with the agent's key.
 * Retries transport errors and 5xx answers 3 times; `event_id` makes a retried post store one event. This is the one
 * place to swap for the SDK's `emitReward` (`arclight/agent`).
 */
async function emitReward(config: AgentConfig, reward: RewardResult, message: string): Promise<void> {
  const body = JSON.stringify({
    event_type: "reward",
    data: { value: reward.value, source: "calculator", reason: reward.reason, message },
    event_id: config.eventId,
  });
  const headers = { "content-type": "application/json", authorization: `Bearer ${config.apiKey}` };
  for (let attempt = 1; ; attempt += 1) {
    let failure: string;
    try {
      const res = await fetch(config.eventUrl, { method: "POST", headers, body });
      if (res.ok) return;
      failure = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
      // A 4xx will not get better by retrying (bad key, unknown rollout, superseded attempt).
      if (res.status < 500) throw new RewardRejected(`reward post rejected: ${failure}`);
    } catch (err) {
      if (err instanceof RewardRejected) throw err;
      failure = String(err);
    }
    if (attempt >= 4) throw new Error(`reward post failed after ${attempt} tries: ${failure}`);
    await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
  }
}

/** Runs one question end to end and prints a one-line JSON summary. */
async function main(): Promise<void> {
  const config = readConfig(process.env);
  const client = new OpenAI({ baseURL: config.baseURL, apiKey: config.apiKey, maxRetries: 5, timeout: 600_000 });
  const outcome = await solve(client, config);
  const reward = computeReward({
    finalContent: outcome.finalContent,
    expected: config.expected,
    toolUsed: outcome.toolUsed,
  });
  const summary = `answer=${reward.answer ?? "none"} expected=${config.expected}`;
  await emitReward(config, reward, outcome.stopped ? `${summary}; ${outcome.stopped}` : summary);
  const { question, expected } = config;
  console.log(
    JSON.stringify({ question, expected, ...reward, toolUsed: outcome.toolUsed, modelCalls: outcome.modelCalls }),
  );
}

/**
 * One rollout, as an `agent_class` export (`agent.js:calculatorRollout`): reads the environment when called, so a
 * controller with `reuse_processes` can run many rollouts in one process. A failure is printed and sets
 * `process.exitCode` (2: bad environment, 1: any other error) instead of throwing.
 */
export async function calculatorRollout(): Promise<void> {
  try {
    await main();
  } catch (err) {
    console.error(`calculator agent: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = err instanceof ConfigError ? 2 : 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void calculatorRollout();
}
