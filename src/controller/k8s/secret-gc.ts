/**
 * @module Deletes key Secrets nobody owns (a crash's leftover): handed to their Job when it references them, else
 * deleted after the orphan grace; the legacy shared Secret goes once no Job references it.
 */
import type { V1Job, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { MANAGED_BY_SELECTOR } from "./job-manifest.js";
import { isOwned, KEY_SECRET_JOB_LABEL, ownerReferenceTo } from "./key-secret.js";
import type { KubeApi } from "./kube-api.js";
import { secretReferences } from "./secret-refs.js";

/** Longest time (ms) between two sweeps: listing every managed Secret each pass would cost too much. */
const MAX_SWEEP_INTERVAL_MS = 10_000;

/** Options of {@link SecretGarbage}. */
export interface SecretGarbageOptions {
  api: KubeApi;
  logger: Logger;
  /** How long an unowned key Secret whose Job does not reference it is kept (ms). */
  orphanGraceMs: number;
  /** The shared Secret of older controllers (`key_secret_name`). */
  legacySecretName: string;
}

/** @returns whether the Job's pod spec references the Secret `name` */
function references(job: V1Job, name: string): boolean {
  const podSpec = job.spec?.template?.spec as unknown as Record<string, unknown> | undefined;
  return podSpec !== undefined && secretReferences(podSpec).some((ref) => ref.name === name);
}

/** The key Secret collector. */
export class SecretGarbage {
  /** Secrets deleted by this collector. */
  deleted = 0;
  /** Unowned Secrets handed to their Job. */
  adopted = 0;
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: SecretGarbageOptions) {}

  /** One sweep, at most every `min(orphan grace, 10 s)`. @throws {KubeError} */
  async collect(jobs: ReadonlyMap<string, V1Job>): Promise<void> {
    const now = Date.now();
    if (now - this.lastSweepMs < Math.min(this.options.orphanGraceMs, MAX_SWEEP_INTERVAL_MS)) return;
    this.lastSweepMs = now;
    for (const secret of await this.options.api.listSecrets(MANAGED_BY_SELECTOR)) {
      if (secret.metadata?.deletionTimestamp || isOwned(secret)) continue;
      const jobName = secret.metadata?.labels?.[KEY_SECRET_JOB_LABEL];
      if (jobName !== undefined) await this.settle(secret, jobName, jobs, now);
      else if (secret.metadata?.name === this.options.legacySecretName) await this.retireLegacy(jobs);
    }
  }

  /** An unowned key Secret: to its Job when the Job references it, else deleted after the grace period. */
  private async settle(secret: V1Secret, jobName: string, jobs: ReadonlyMap<string, V1Job>, now: number) {
    const name = secret.metadata?.name ?? "";
    const cached = jobs.get(jobName);
    if (cached !== undefined && !cached.metadata?.deletionTimestamp && references(cached, name)) {
      await this.adopt(name, cached);
      return;
    }
    const ageMs = now - new Date(secret.metadata?.creationTimestamp ?? 0).getTime();
    if (ageMs < this.options.orphanGraceMs) return;
    // The cache may lag a Job created a moment ago: ask the API server before deleting its key.
    const job = await this.options.api.getJob(jobName);
    if (job !== undefined && !job.metadata?.deletionTimestamp && references(job, name)) {
      await this.adopt(name, job);
      return;
    }
    this.options.logger.info(
      { secretName: name, jobName, ageS: Math.round(ageMs / 1000) },
      "deleting orphan key Secret",
    );
    await this.options.api.deleteSecret(name);
    this.deleted++;
  }

  private async adopt(name: string, job: V1Job): Promise<void> {
    this.options.logger.info({ secretName: name, jobName: job.metadata?.name }, "handing key Secret to its Job");
    await this.options.api.setSecretOwner(name, ownerReferenceTo(job));
    this.adopted++;
  }

  /** The shared admin-key Secret of an older controller: deleted once no Job of ours references it. */
  private async retireLegacy(jobs: ReadonlyMap<string, V1Job>): Promise<void> {
    const name = this.options.legacySecretName;
    const users = [...jobs.values()].filter((job) => references(job, name)).length;
    if (users > 0) {
      this.options.logger.warn({ secretName: name, jobs: users }, "legacy admin-key Secret still referenced by Jobs");
      return;
    }
    this.options.logger.warn({ secretName: name }, "deleting the legacy Secret holding the admin key");
    await this.options.api.deleteSecret(name);
    this.deleted++;
  }
}
