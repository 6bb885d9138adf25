/**
 * @module The flaky-lookup agent: for each digit of `DIGITS` it asks the policy to look the digit up ("look up 4");
 * the reply is the tool's argument, and the tool, flaky, fails on about 45% of calls (task.ts), in which case the
 * agent asks again. Each lookup scores its last reply; the rollout's reward is the mean lookup score. Rollouts of one
 * input make from 1 to 8 model calls, so per-rollout and per-token loss normalisation weigh them differently, and the
 * calls of failed lookups carry the rollout's credit without having changed its reward. Run by the controller
 * (`agent_class: agent.js:flakyLookupRollout`, or as a command), with `DIGITS` from the input's `digits`.
 *
 * Exit codes (as a command): 0 when the reward was posted; 1 on an error; 2 on a missing or bad variable.
 */
import { pathToFileURL } from "node:url";
import { emitReward, fromEnv, openaiClient } from "../../src/agent/index.js";
import { lookupsOf, MAX_CALLS, rolloutReward, scoreReply, toolFails } from "./task.js";

/** Longest reply asked for (tokens; the byte tokenizer makes that bytes). */
const MAX_TOKENS = 3;

/** What one rollout did. */
export interface LookupOutcome {
  reward: number;
  calls: number;
  scores: number[];
}

/**
 * Runs the lookups of one rollout against the model.
 * @param ask - sends one user message, returns the reply text
 * @param digits - the digits to look up
 * @param rolloutId - seeds the tool's failures
 * @returns the reward, the model calls made and each reached lookup's score
 */
export async function runLookups(
  ask: (message: string) => Promise<string>,
  digits: readonly number[],
  rolloutId: string,
): Promise<LookupOutcome> {
  const scores: number[] = [];
  let calls = 0;
  for (const digit of digits) {
    let reply = "";
    for (;;) {
      if (calls === MAX_CALLS) return { reward: rolloutReward(scores, digits.length), calls, scores };
      reply = await ask(`look up ${digit}`);
      calls += 1;
      if (!toolFails(rolloutId, calls - 1)) break;
    }
    scores.push(scoreReply(reply, digit));
  }
  return { reward: rolloutReward(scores, digits.length), calls, scores };
}

async function main(): Promise<void> {
  const env = fromEnv();
  const digits = lookupsOf(process.env.DIGITS ?? "");
  const client = openaiClient();
  const ask = async (message: string) => {
    const completion = await client.chat.completions.create({
      model: process.env.LOOKUP_MODEL ?? "policy",
      messages: [{ role: "user", content: message }],
      max_tokens: MAX_TOKENS,
    });
    return completion.choices[0]?.message.content ?? "";
  };
  const outcome = await runLookups(ask, digits, env.rolloutId);
  await emitReward(outcome.reward, { source: "flaky-lookup", reason: `${outcome.calls} calls` });
  console.log(JSON.stringify({ digits, ...outcome }));
}

/** One rollout, as an `agent_class` export: errors are printed and set `process.exitCode` instead of throwing. */
export async function flakyLookupRollout(): Promise<void> {
  try {
    await main();
  } catch (err) {
    console.error(`flaky-lookup agent: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = err instanceof RangeError ? 2 : 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void flakyLookupRollout();
}
