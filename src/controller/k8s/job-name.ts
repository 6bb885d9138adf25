/**
 * @module Kubernetes names for a rollout's Job: a deterministic DNS-1123 Job name from the rollout and attempt ids,
 * and label values that stay valid for any rollout id.
 */
import { createHash } from "node:crypto";

/** Prefix of every Job name (Agent Lightning's is `agl-rollout-`). */
export const JOB_NAME_PREFIX = "arclight-rollout-";

/**
 * Longest Job name: the Job controller copies the name into the `job-name` label of its Pods, and label values are
 * at most 63 characters.
 */
export const MAX_JOB_NAME_LENGTH = 63;

/** A DNS-1123 label: lowercase letters, digits and `-`, starting and ending alphanumeric. */
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A label value: up to 63 of letters, digits, `-`, `_`, `.`, starting and ending alphanumeric. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** Hex characters of the sha256 suffix. */
const HASH_CHARS = 10;

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, HASH_CHARS);
}

/**
 * The Job name of one attempt of a rollout. Attempt "0" of an id that is a short DNS-1123 label keeps the id
 * readable as is (`arclight-rollout-r1`), as Agent Lightning's `agl-rollout-{id}`. Any other id or attempt gets a
 * readable, truncated, lowercased prefix plus a sha256 suffix of (id, attempt), so two rollouts differing only in
 * case or in an illegal character never share a Job, and a retry never reuses the failed attempt's Job.
 * @param rolloutId - any rollout id (letters, digits, `.`, `_`, `-`, `:`; up to 200 characters)
 * @param attemptId - the attempt, e.g. "0"
 * @returns a DNS-1123 label of at most {@link MAX_JOB_NAME_LENGTH} characters
 * @see https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names
 */
export function jobNameFor(rolloutId: string, attemptId: string): string {
  const plain = `${JOB_NAME_PREFIX}${rolloutId}`;
  if (attemptId === "0" && plain.length <= MAX_JOB_NAME_LENGTH && DNS_1123_LABEL.test(rolloutId)) return plain;
  const suffix = `-${shortHash(`${rolloutId}\u0000${attemptId}`)}`;
  const readable = rolloutId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, MAX_JOB_NAME_LENGTH - JOB_NAME_PREFIX.length - suffix.length)
    .replace(/^-+|-+$/g, "");
  return readable === "" ? `${JOB_NAME_PREFIX}${suffix.slice(1)}` : `${JOB_NAME_PREFIX}${readable}${suffix}`;
}

/**
 * A label value standing for `value`: the value itself when it is a valid label value, else a truncated,
 * sanitized prefix plus a sha256 suffix. Labels select; the exact ids live in annotations.
 * @param value - any string
 * @returns a valid label value (at most 63 characters)
 */
export function labelValueFor(value: string): string {
  if (value.length <= 63 && LABEL_VALUE.test(value)) return value;
  const suffix = shortHash(value);
  const readable = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, 63 - suffix.length - 1)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return readable === "" ? suffix : `${readable}-${suffix}`;
}
