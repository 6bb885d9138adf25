/** @module What a Job's status says about its attempt: still running, succeeded, or failed with a reason. */
import type { V1Job } from "@kubernetes/client-node";
import { ATTEMPT_ID_KEY, ROLLOUT_ID_KEY } from "./job-manifest.js";

/** The end of a Job, or undefined while it runs. */
export type JobOutcome = { state: "succeeded" } | { state: "failed"; reason: string; jobReason: string };

/**
 * Reads a Job's conditions as Agent Lightning does: `Complete=True` → succeeded; `Failed=True` → failed with
 * `Job failed: <reason> — <message>` (e.g. `DeadlineExceeded`, `BackoffLimitExceeded`); with no condition yet,
 * `status.succeeded > 0` → succeeded and `status.failed > 0` → failed.
 * @param job - a Job as the API returns it
 * @returns the outcome, or undefined while the Job runs
 */
export function jobOutcome(job: V1Job): JobOutcome | undefined {
  for (const condition of job.status?.conditions ?? []) {
    if (condition.status !== "True") continue;
    if (condition.type === "Complete") return { state: "succeeded" };
    if (condition.type === "Failed") {
      const jobReason = condition.reason ?? "Unknown";
      const message = condition.message ? ` — ${condition.message}` : "";
      return { state: "failed", reason: `Job failed: ${jobReason}${message}`, jobReason };
    }
  }
  if ((job.status?.succeeded ?? 0) > 0) return { state: "succeeded" };
  if ((job.status?.failed ?? 0) > 0) return { state: "failed", reason: "Job failed", jobReason: "Unknown" };
  return undefined;
}

/** The rollout and attempt a managed Job runs (from its annotations), or undefined for a Job without them. */
export function jobOwner(job: V1Job): { rolloutId: string; attemptId: string } | undefined {
  const annotations = job.metadata?.annotations ?? {};
  const rolloutId = annotations[ROLLOUT_ID_KEY];
  const attemptId = annotations[ATTEMPT_ID_KEY];
  if (rolloutId === undefined || attemptId === undefined) return undefined;
  return { rolloutId, attemptId };
}
