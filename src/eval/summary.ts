/**
 * @module What `arclight eval` reports: per task the passes among its samples, and over all tasks pass@k for each k,
 * the mean reward, the completion share and the reward coverage; as a plain-text table, JSON or CSV.
 */
import type { RolloutOutcome, TaskOutcome } from "./eval-rollouts.js";
import { meanPassAtK } from "./pass-at-k.js";

/** One task's line of the report. */
export interface TaskSummary {
  dataIndex: number;
  /** Rollouts of the task (n). */
  samples: number;
  /** Rollouts that completed with reward ≥ threshold (c). */
  passed: number;
  /** Mean final reward of the task's rollouts (failed ones count as `reward_fillna_value`). */
  meanReward: number;
  /** Rollouts that completed without an agent error. */
  completed: number;
}

/** The whole evaluation. */
export interface EvalSummary {
  tasks: number;
  samplesPerTask: number;
  rollouts: number;
  /** Reward at or above which a completed rollout passes. */
  threshold: number;
  /** pass@k for each requested k, in the order given. */
  passAtK: { k: number; value: number }[];
  /** Mean final reward over every rollout. */
  meanReward: number;
  /** Share of rollouts that completed without an agent error (crash, timeout). */
  completedShare: number;
  /** Share of rollouts whose events gave a final reward. */
  rewardedShare: number;
  perTask: TaskSummary[];
}

/** Whether a rollout passes: it completed and its reward reached the threshold. */
function passes(rollout: RolloutOutcome, threshold: number): boolean {
  return rollout.completed && rollout.reward >= threshold;
}

/** Mean of a list; 0 for none. */
function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * Summarises the evaluation's outcomes.
 * @param tasks - per task, its rollouts (the same number for every task)
 * @param ks - the k of each pass@k to report, each ≤ the samples per task
 * @param threshold - reward at or above which a completed rollout passes
 * @returns the summary
 * @throws {RangeError} for a k above the samples per task (see pass-at-k.ts)
 */
export function summariseEval(tasks: readonly TaskOutcome[], ks: readonly number[], threshold: number): EvalSummary {
  const perTask = tasks.map((task) => ({
    dataIndex: task.dataIndex,
    samples: task.rollouts.length,
    passed: task.rollouts.filter((rollout) => passes(rollout, threshold)).length,
    meanReward: mean(task.rollouts.map((rollout) => rollout.reward)),
    completed: task.rollouts.filter((rollout) => rollout.completed).length,
  }));
  const all = tasks.flatMap((task) => task.rollouts);
  const counts = perTask.map((task) => ({ n: task.samples, c: task.passed }));
  return {
    tasks: tasks.length,
    samplesPerTask: tasks[0]?.rollouts.length ?? 0,
    rollouts: all.length,
    threshold,
    passAtK: ks.map((k) => ({ k, value: meanPassAtK(counts, k) })),
    meanReward: mean(all.map((rollout) => rollout.reward)),
    completedShare: mean(all.map((rollout) => (rollout.completed ? 1 : 0))),
    rewardedShare: mean(all.map((rollout) => (rollout.rewarded ? 1 : 0))),
    perTask,
  };
}

/** The summary's rows as (metric, value) pairs, values formatted for the table. */
function metricRows(summary: EvalSummary): [string, string][] {
  return [
    ["tasks", String(summary.tasks)],
    ["samples per task", String(summary.samplesPerTask)],
    ["rollouts", String(summary.rollouts)],
    ...summary.passAtK.map(({ k, value }): [string, string] => [
      `pass@${k} (reward >= ${summary.threshold})`,
      value.toFixed(4),
    ]),
    ["mean reward", summary.meanReward.toFixed(4)],
    ["completed", `${(summary.completedShare * 100).toFixed(1)}%`],
    ["rewarded", `${(summary.rewardedShare * 100).toFixed(1)}%`],
  ];
}

/**
 * The summary as a two-column plain-text table, for the terminal.
 * @param summary - from {@link summariseEval}
 * @returns lines joined by newlines, no trailing newline
 */
export function formatEvalTable(summary: EvalSummary): string {
  const rows = metricRows(summary);
  const width = Math.max("metric".length, ...rows.map(([name]) => name.length));
  const valueWidth = Math.max("value".length, ...rows.map(([, value]) => value.length));
  const line = (name: string, value: string) => `${name.padEnd(width)}  ${value.padStart(valueWidth)}`;
  return [
    line("metric", "value"),
    `${"-".repeat(width)}  ${"-".repeat(valueWidth)}`,
    ...rows.map(([n, v]) => line(n, v)),
  ].join("\n");
}

/**
 * The summary as CSV: one row per task (`data_index,samples,passed,completed,mean_reward`), then the overall metrics as
 * `metric,value` rows after a blank line.
 * @param summary - from {@link summariseEval}
 * @returns the CSV text, ending in a newline
 */
export function formatEvalCsv(summary: EvalSummary): string {
  const tasks = summary.perTask.map((t) => [t.dataIndex, t.samples, t.passed, t.completed, t.meanReward].join(","));
  const metrics: [string, number][] = [
    ["tasks", summary.tasks],
    ["samples_per_task", summary.samplesPerTask],
    ["rollouts", summary.rollouts],
    ["threshold", summary.threshold],
    ...summary.passAtK.map(({ k, value }): [string, number] => [`pass@${k}`, value]),
    ["mean_reward", summary.meanReward],
    ["completed_share", summary.completedShare],
    ["rewarded_share", summary.rewardedShare],
  ];
  return [
    "data_index,samples,passed,completed,mean_reward",
    ...tasks,
    "",
    "metric,value",
    ...metrics.map(([name, value]) => `${name},${value}`),
    "",
  ].join("\n");
}
