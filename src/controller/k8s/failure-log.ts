/** @module The `log` event of a failed attempt's Job: the newest pod's last lines, or why they could not be read. */
import type { JobOutcome } from "./job-status.js";
import type { KubeApi } from "./kube-api.js";

/** The `data` of a failed attempt's `log` event; when no log can be read, `text: ""` and `log_error`. Never throws. */
export async function failureLog(
  api: KubeApi,
  jobName: string,
  outcome: JobOutcome & { state: "failed" },
  lines: number,
): Promise<Record<string, unknown>> {
  const data: Record<string, unknown> = {
    source: "k8s",
    job_name: jobName,
    reason: outcome.reason,
    job_reason: outcome.jobReason,
  };
  try {
    const tail = await api.podLogTail(jobName, lines);
    if (tail === undefined) return { ...data, text: "", log_error: "the Job has no Pod" };
    return {
      ...data,
      pod_name: tail.podName,
      container: tail.container,
      exit_code: tail.exitCode,
      log_source: tail.source,
      text: tail.text,
    };
  } catch (err) {
    return { ...data, text: "", log_error: (err as Error).message };
  }
}
