/**
 * @module The judge applied to a finished group: each rollout's answer (its last model call's response text) is
 * judged, pointwise or ranked with the group, and the verdict is written through the gateway as events of the
 * rollout's last attempt: a `judge` event (the judged reward or the problem) and, when judged, a `reward` event
 * carrying the new final reward, so the trainer, `arclight eval` and `arclight inspect` all read the same reward.
 * A rollout the judge could not score keeps its own reward; its `judge` event says why.
 */
import type { GatewayClient } from "../gateway/client.js";
import type { EventCreateInput } from "../protocol/index.js";
import { type RolloutRecord, trainedAgents } from "../trainer/batch.js";
import type { TrainerConfig } from "../trainer/config.js";
import { extractTriplets } from "../trainer/triplets.js";
import type { JudgeConfig } from "./config.js";
import type { Judge, JudgeOutcome } from "./judge.js";

/** The judge and its section of the trainer config. */
export interface GroupJudge {
  judge: Judge;
  config: JudgeConfig;
}

/** The reward settings the final reward is computed under, and whose calls answer for the rollout. */
export interface RewardSettings {
  reward_fillna_value: number;
  reward_policy: "last" | "sum" | "per_call";
  /** The config's `agents` section: the answer is the last call of an agent that trains; absent: the last call. */
  agents?: TrainerConfig["agents"];
}

/** What judging one group did. */
export interface JudgedGroup {
  /** The records with the posted events appended. */
  records: RolloutRecord[];
  /** Rollouts given a judged reward. */
  judged: number;
  /** Rollouts the judge could not score (no answer, endpoint failure, unparsable reply): each has a `judge` event. */
  errors: number;
}

/**
 * The task text the judge sees: the input's `task_field` when it is a string, else the input as JSON.
 * @param input - the rollout input
 * @param field - the configured field name
 */
export function taskText(input: unknown, field: string): string {
  const value = input !== null && typeof input === "object" ? (input as Record<string, unknown>)[field] : undefined;
  return typeof value === "string" ? value : JSON.stringify(input);
}

/**
 * A rollout's answer and its current final reward. The answer is the response text of the last call made by an agent
 * that trains (`agents.train`, less `agents.frozen`), so a frozen reviewer's verdict (sql_team's checker speaks last)
 * is never judged as the team's answer; with no `agents` lists, the last call's.
 * @param record - the rollout's triplet events
 * @param settings - the reward fill value and policy, and the `agents` section
 * @returns the answer (null when no such call has text) and the final reward over every call
 */
export function readRollout(record: RolloutRecord, settings: RewardSettings) {
  const triplets = extractTriplets(record.rolloutId, record.dataId, record.events, settings.reward_fillna_value, {
    rewardPolicy: settings.reward_policy,
  });
  const answers = settings.agents === undefined ? undefined : trainedAgents(settings.agents).agents;
  const last = triplets.calls.filter((call) => answers === undefined || answers(call.agentName)).at(-1);
  return { answer: last?.responseText ?? null, reward: triplets.reward };
}

/** The judged outcome of each record: pointwise one request each, group one request for all that have an answer. */
async function judgeAll(
  judge: GroupJudge,
  task: string,
  answers: readonly (string | null)[],
): Promise<(JudgeOutcome & { index?: number })[]> {
  const noAnswer: JudgeOutcome = {
    ok: false,
    problem: "the rollout made no model call with a text answer (of an agent that trains, when agents names some)",
    attempts: 0,
  };
  if (judge.config.mode === "pointwise") {
    return Promise.all(answers.map((answer) => (answer === null ? noAnswer : judge.judge.scoreAnswer(task, answer))));
  }
  const present = answers.flatMap((answer, i) => (answer === null ? [] : [i]));
  if (present.length < 2) {
    const few: JudgeOutcome = { ok: false, problem: "group mode needs at least 2 answers in the group", attempts: 0 };
    return answers.map((answer) => (answer === null ? noAnswer : few));
  }
  const ranked = await judge.judge.rankAnswers(
    task,
    present.map((i) => answers[i] as string),
  );
  return answers.map((answer, i) => {
    if (answer === null) return noAnswer;
    if (!ranked.ok) return ranked;
    return { ...ranked, rewards: [ranked.rewards[present.indexOf(i)] as number] };
  });
}

/**
 * The events recording one rollout's verdict. The posted reward is the new final reward under `last`/`per_call`; under
 * `sum` it is the difference that brings the sum there.
 */
function verdictEvents(judge: GroupJudge, outcome: JudgeOutcome, current: number, settings: RewardSettings) {
  const base = { mode: judge.config.mode, model: judge.config.model, attempts: outcome.attempts };
  if (!outcome.ok) return [{ event_type: "judge", data: { ...base, error: outcome.problem } }];
  const judged = outcome.rewards[0] as number;
  const weighted = judge.config.weight * judged;
  const final = judge.config.combine === "add" ? current + weighted : weighted;
  const value = settings.reward_policy === "sum" ? final - current : final;
  return [
    { event_type: "judge", data: { ...base, judged_reward: judged, agent_reward: current, final_reward: final } },
    { event_type: "reward", data: { value } },
  ] satisfies EventCreateInput[];
}

/**
 * Judges a finished group and posts the verdicts.
 * @param client - gateway client
 * @param judge - the judge and its config section
 * @param input - the group's input (the task)
 * @param records - the group's records (failed rollouts already left out or stripped by the caller)
 * @param settings - the trainer's reward fill value and policy
 * @returns the records with the posted events appended, and the counts
 * @throws whatever the gateway client throws when posting (the judge itself never throws)
 */
export async function judgeGroup(
  client: GatewayClient,
  judge: GroupJudge,
  input: unknown,
  records: readonly RolloutRecord[],
  settings: RewardSettings,
): Promise<JudgedGroup> {
  const read = records.map((record) => readRollout(record, settings));
  const outcomes = await judgeAll(
    judge,
    taskText(input, judge.config.task_field),
    read.map((r) => r.answer),
  );
  const result: JudgedGroup = { records: [], judged: 0, errors: 0 };
  for (const [i, record] of records.entries()) {
    const outcome = outcomes[i] as JudgeOutcome;
    if (outcome.ok) result.judged += 1;
    else result.errors += 1;
    const rollout = await client.getRollout(record.rolloutId);
    const attemptId = rollout.rollout.status.last_attempt_id ?? "0";
    const posted = await client.postEvents(
      record.rolloutId,
      attemptId,
      verdictEvents(judge, outcome, read[i]?.reward ?? 0, settings),
    );
    result.records.push({ ...record, events: [...record.events, ...posted] });
  }
  return result;
}
