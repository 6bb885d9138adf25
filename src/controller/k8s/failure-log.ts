/** @module The `log` event of a failed attempt's Job: the newest pod's last lines, or why they could not be read. */
import type { JobOutcome } from "./job-status.js";
import type { KubeApi } from "./kube-api.js";

/**
 * Builds the `data` of a failed attempt's `log` event.
 * @param api - the namespace's API
 * @param jobName - the failed Job
 * @param outcome - its failure (reason and the Job condition's reason)
 * @param lines - log lines to keep
 * @returns `{source: "k8s", job_name, reason, job_reason, pod_name, container, exit_code, log_source, text}`, or,
 *   when no log could be read, `text: ""` and `log_error` saying why; never throws
 */
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
