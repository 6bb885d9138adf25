import type { V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { DEADLINE_GRACE_SECONDS, jobOutcome } from "./job-status.js";

const START = Date.parse("2026-12-02T10:00:00Z");

/** The failure reason of an outcome, or undefined. */
const reasonOf = (outcome: ReturnType<typeof jobOutcome>): string | undefined =>
  outcome?.state === "failed" ? outcome.reason : undefined;

/** A running Job with a 2 s deadline, started at {@link START}; `startTime` as a watch gives it (text). */
function runningJob(extra: { startTime?: string | Date; deadline?: number; conditions?: unknown[] } = {}): V1Job {
  return {
    metadata: { name: "arclight-rollout-slow-1", creationTimestamp: new Date(START - 5_000) },
    spec: { template: {}, activeDeadlineSeconds: extra.deadline ?? 2 },
    status: {
      active: 1,
      ...(extra.startTime === undefined ? {} : { startTime: extra.startTime as Date }),
      ...(extra.conditions ? { conditions: extra.conditions as never } : {}),
    },
  } as V1Job;
}

describe("jobOutcome past the deadline", () => {
  it("runs until the grace after activeDeadlineSeconds is over, then fails with DeadlineExceeded", () => {
    const job = runningJob({ startTime: "2026-12-02T10:00:00Z" });
    const lastRunning = START + (2 + DEADLINE_GRACE_SECONDS) * 1000 + 999;
    expect(jobOutcome(job, START + 1000)).toBeUndefined();
    expect(jobOutcome(job, lastRunning)).toBeUndefined();
    const outcome = jobOutcome(job, lastRunning + 1);
    expect(outcome).toEqual({
      state: "failed",
      jobReason: "DeadlineExceeded",
      reason: `Job failed: DeadlineExceeded — active 33 s, past its activeDeadlineSeconds (2 s) by more than 30 s without the job controller ending it`,
    });
  });

  it("reads startTime as a Date too, and falls back to the creation time without one", () => {
    const late = START + 40_000;
    expect(jobOutcome(runningJob({ startTime: new Date(START) }), late)?.state).toBe("failed");
    // Created 5 s before START: 45 s active at `late`.
    expect(reasonOf(jobOutcome(runningJob(), late))).toMatch(/^Job failed: DeadlineExceeded — active 45 s/);
  });

  it("leaves a Job without a deadline running, and a condition wins over the clock", () => {
    const noDeadline = runningJob({ startTime: "2026-12-02T10:00:00Z" });
    delete noDeadline.spec!.activeDeadlineSeconds;
    expect(jobOutcome(noDeadline, START + 86_400_000)).toBeUndefined();
    const complete = runningJob({
      startTime: "2026-12-02T10:00:00Z",
      conditions: [{ type: "Complete", status: "True" }],
    });
    expect(jobOutcome(complete, START + 86_400_000)).toEqual({ state: "succeeded" });
    const failed = runningJob({
      startTime: "2026-12-02T10:00:00Z",
      conditions: [{ type: "Failed", status: "True", reason: "DeadlineExceeded", message: "Job was active longer" }],
    });
    expect(reasonOf(jobOutcome(failed, START + 86_400_000))).toBe(
      "Job failed: DeadlineExceeded — Job was active longer",
    );
  });

  it("a start time it cannot read leaves the Job running", () => {
    expect(jobOutcome(runningJob({ startTime: "not a time" }), START + 86_400_000)).toBeUndefined();
  });
});
