/** @module What a Job's status says about its attempt: still running, succeeded, or failed with a reason. */
import type { V1Job } from "@kubernetes/client-node";
import { ATTEMPT_ID_KEY, ROLLOUT_ID_KEY } from "./job-manifest.js";

/** The end of a Job, or undefined while it runs. */
export type JobOutcome = { state: "succeeded" } | { state: "failed"; reason: string; jobReason: string };

/**
 * Seconds past `activeDeadlineSeconds` after which a Job with no end condition counts as `DeadlineExceeded`: the
 * Kubernetes 1.20 job controller can check the deadline too early (a stale start time) and never again.
 */
export const DEADLINE_GRACE_SECONDS = 30;

/**
 * A Job's outcome as AGL reads it: `Complete` / `Failed` conditions, else `status.succeeded` / `status.failed`, and
 * `DeadlineExceeded` past {@link DEADLINE_GRACE_SECONDS}; undefined while it runs.
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
