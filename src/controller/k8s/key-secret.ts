/**
 * @module A Job's key Secret: the attempt's key-derived variables (an attempt-scoped token, never the admin key),
 * owned by the Job so Kubernetes deletes it with the Job.
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

/** The Job name, `-key-` and 6 random characters: a Secret left by a failed try is never mistaken for a new one. */
export function keySecretNameFor(jobName: string): string {
  const suffix = [...randomBytes(6)].map((b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join("");
  return `${jobName}-key-${suffix}`;
}

/** The immutable, unowned key Secret of one attempt's Job. @throws {EnvMapError} */
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
 * The ownerReference handing a key Secret to its Job, without `blockOwnerDeletion` (that needs `jobs/finalizers`).
 * @see https://kubernetes.io/docs/concepts/architecture/garbage-collection/#owners-dependents
 */
export function ownerReferenceTo(job: V1Job): V1OwnerReference {
  return { apiVersion: "batch/v1", kind: "Job", name: job.metadata?.name ?? "", uid: job.metadata?.uid ?? "" };
}

/** @returns whether the Secret has an owner (then Kubernetes deletes it with that owner) */
export function isOwned(secret: V1Secret): boolean {
  return (secret.metadata?.ownerReferences ?? []).length > 0;
}
