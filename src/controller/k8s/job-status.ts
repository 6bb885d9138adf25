/** @module What a Job's status says about its attempt: still running, succeeded, or failed with a reason. */
import type { V1Job } from "@kubernetes/client-node";
import { ATTEMPT_ID_KEY, ROLLOUT_ID_KEY } from "./job-manifest.js";

/** The end of a Job, or undefined while it runs. */
export type JobOutcome = { state: "succeeded" } | { state: "failed"; reason: string; jobReason: string };

/**
 * Seconds past its `activeDeadlineSeconds` after which a Job with no end condition is taken as failed with
 * `DeadlineExceeded` all the same. The job controller of Kubernetes 1.20 checks the deadline only in a sync it
 * queues when it first sets `status.startTime`; a later sync that reads a stale Job sets a later start time, so that
 * check comes too early and none follows until something else changes the Job or its pods (seen in CI: a Job still
 * active 90 s past a 2 s deadline, with no kubelet to update its pod). A healthy job controller ends a Job within a
 * few seconds of its deadline, so this only catches one that missed it.
 */
export const DEADLINE_GRACE_SECONDS = 30;

/**
 * Reads a Job's conditions as Agent Lightning does: `Complete=True` → succeeded; `Failed=True` → failed with
 * `Job failed: <reason> — <message>` (e.g. `DeadlineExceeded`, `BackoffLimitExceeded`); with no condition yet,
 * `status.succeeded > 0` → succeeded and `status.failed > 0` → failed. A Job still active more than
 * {@link DEADLINE_GRACE_SECONDS} past its `activeDeadlineSeconds` (counted from `status.startTime`, else its creation)
 * is failed with `DeadlineExceeded`, whether or not the job controller has said so.
 * @param job - a Job as the API or a watch returns it (times as `Date` or RFC 3339 text)
 * @param nowMs - the current time, ms since the epoch
 * @returns the outcome, or undefined while the Job runs
 */
export function jobOutcome(job: V1Job, nowMs = Date.now()): JobOutcome | undefined {
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
  return overDeadline(job, nowMs);
}

/** `DeadlineExceeded` for a Job active longer than its deadline and the grace; undefined otherwise. */
function overDeadline(job: V1Job, nowMs: number): JobOutcome | undefined {
  const deadlineSeconds = job.spec?.activeDeadlineSeconds;
  const started = job.status?.startTime ?? job.metadata?.creationTimestamp;
  if (deadlineSeconds === undefined || started === undefined) return undefined;
  const startedMs = new Date(started).getTime();
  if (Number.isNaN(startedMs)) return undefined;
  const activeSeconds = Math.floor((nowMs - startedMs) / 1000);
  if (activeSeconds <= deadlineSeconds + DEADLINE_GRACE_SECONDS) return undefined;
  return {
    state: "failed",
    reason:
      `Job failed: DeadlineExceeded — active ${activeSeconds} s, past its activeDeadlineSeconds ` +
      `(${deadlineSeconds} s) by more than ${DEADLINE_GRACE_SECONDS} s without the job controller ending it`,
    jobReason: "DeadlineExceeded",
  };
}

/** The rollout and attempt a managed Job runs (from its annotations), or undefined for a Job without them. */
export function jobOwner(job: V1Job): { rolloutId: string; attemptId: string } | undefined {
  const annotations = job.metadata?.annotations ?? {};
  const rolloutId = annotations[ROLLOUT_ID_KEY];
  const attemptId = annotations[ATTEMPT_ID_KEY];
  if (rolloutId === undefined || attemptId === undefined) return undefined;
  return { rolloutId, attemptId };
}
