/**
 * @module The key Secret of one Job: it holds that attempt's key-derived agent variables (`AGL_KEY`,
 * `OPENAI_API_KEY`, … set to an agent token scoped to the attempt, never the admin key), is created just before its
 * Job and then owned by it, so Kubernetes' garbage collector deletes it with the Job.
 */
import { randomBytes } from "node:crypto";
import type { V1Job, V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import type { Rollout } from "../../protocol/index.js";
import {
  ATTEMPT_ID_KEY,
  type JobSettings,
  jobAgentEnv,
  keyEnvNames,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ROLLOUT_ID_KEY,
} from "./job-manifest.js";
import { jobNameFor, labelValueFor } from "./job-name.js";

/** Label of a key Secret naming its Job (Job names are valid label values). */
export const KEY_SECRET_JOB_LABEL = "arclight/job-name";

/** Lowercase letters and digits of a Secret name's random suffix. */
const SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/**
 * A fresh name for a Job's key Secret: the Job name plus `-key-` and 6 random characters. Each creation try gets
 * its own Secret, so a Secret left by a crashed or failed try is never mistaken for the one a new Job references.
 * @param jobName - the Job's name (at most 63 characters)
 * @returns e.g. `arclight-rollout-r1-key-x7k2pq`, a DNS-1123 subdomain of at most 74 characters
 */
export function keySecretNameFor(jobName: string): string {
  const suffix = [...randomBytes(6)].map((b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join("");
  return `${jobName}-key-${suffix}`;
}

/**
 * The key Secret of one attempt's Job, unowned (the owner is set once the Job exists).
 * @param name - from {@link keySecretNameFor}; the Job's manifest references it
 * @param rollout - the rollout the Job runs
 * @param attemptId - the attempt the Job runs
 * @param settings - the Job settings the manifest was built with
 * @param agentKey - the attempt's agent token (`agentKeyFor`)
 * @returns the Secret (immutable): the key-derived variables under their own names, labelled managed-by, rollout,
 *   attempt and {@link KEY_SECRET_JOB_LABEL}
 * @throws {EnvMapError} an `env_map` path missing from the rollout (the manifest would have thrown first)
 */
export function keySecretFor(
  name: string,
  rollout: Rollout,
  attemptId: string,
  settings: JobSettings,
  agentKey: string,
): V1Secret {
  const env = jobAgentEnv(rollout, attemptId, settings, agentKey);
  const stringData: Record<string, string> = {};
  for (const key of keyEnvNames(rollout, attemptId, settings)) stringData[key] = env[key] ?? "";
  const labels = {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [ROLLOUT_ID_KEY]: labelValueFor(rollout.rollout_id),
    [ATTEMPT_ID_KEY]: labelValueFor(attemptId),
    [KEY_SECRET_JOB_LABEL]: jobNameFor(rollout.rollout_id, attemptId),
  };
  const annotations = { [ROLLOUT_ID_KEY]: rollout.rollout_id, [ATTEMPT_ID_KEY]: attemptId };
  const metadata = { name, namespace: settings.namespace, labels, annotations };
  // Immutable: nobody rewrites a token in place, and kubelets need not watch the Secret for changes.
  return { metadata, type: "Opaque", immutable: true, stringData };
}

/**
 * The ownerReference that hands a key Secret to its Job: when the Job is deleted (by the controller, by
 * `ttlSecondsAfterFinished`, by hand) the garbage collector deletes the Secret too.
 * @param job - the created Job (its uid is set)
 * @returns a reference without `blockOwnerDeletion` (that would need `update` on `jobs/finalizers`)
 * @see https://kubernetes.io/docs/concepts/architecture/garbage-collection/#owners-dependents
 */
export function ownerReferenceTo(job: V1Job): V1OwnerReference {
  return { apiVersion: "batch/v1", kind: "Job", name: job.metadata?.name ?? "", uid: job.metadata?.uid ?? "" };
}

/** @returns whether the Secret has an owner (then Kubernetes deletes it with that owner) */
export function isOwned(secret: V1Secret): boolean {
  return (secret.metadata?.ownerReferences ?? []).length > 0;
}
