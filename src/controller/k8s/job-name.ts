/** @module Deterministic DNS-1123 Job names and always-valid label values for any rollout id. */
import { createHash } from "node:crypto";

/** Prefix of every Job name (Agent Lightning's is `agl-rollout-`). */
export const JOB_NAME_PREFIX = "arclight-rollout-";

/** Longest Job name: it is copied into the Pods' `job-name` label, and label values are at most 63 characters. */
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
 * A short DNS-1123 id at attempt "0" stays readable (`arclight-rollout-r1`, as AGL's `agl-rollout-{id}`); anything
 * else gets a truncated prefix plus a sha256 of (id, attempt), so case-only differences and retries never collide.
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

/** `value` if a valid label value, else a sanitized prefix plus a sha256 suffix; the exact ids live in annotations. */
export function labelValueFor(value: string): string {
  if (value.length <= 63 && LABEL_VALUE.test(value)) return value;
  const suffix = shortHash(value);
  const readable = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, 63 - suffix.length - 1)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return readable === "" ? suffix : `${readable}-${suffix}`;
}
