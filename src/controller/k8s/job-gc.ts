/**
 * @module Deletes unwanted Jobs: at once when running for a rollout deleted, failed or moved on, or finished for a
 * failed or superseded attempt; after a grace period when orphaned. Succeeded Jobs are left to their TTL.
 */
import type { V1Job } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { GatewayClient } from "../../gateway/client.js";
import { currentAttemptOf, type Rollout, RolloutNotFound } from "../../protocol/index.js";
import { jobOutcome, jobOwner } from "./job-status.js";
import type { KubeApi } from "./kube-api.js";

/** Gateway look-ups per pass: with thousands of finished Jobs a pass stays short; the rest wait for later passes. */
const MAX_LOOKUPS_PER_PASS = 50;

/** Options of {@link JobGarbage}. */
export interface JobGarbageOptions {
  api: KubeApi;
  client: GatewayClient;
  logger: Logger;
  /** How long a finished Job of an unknown rollout, or a Job naming none, is kept (ms). */
  orphanGraceMs: number;
}

/** The Job collector; remembers which Jobs need no more look-ups. */
export class JobGarbage {
  /** Jobs by uid whose attempt succeeded: left to their TTL, never looked up again. */
  private readonly settled = new Set<string>();
  /** Jobs by uid first seen without a rollout, ms. */
  private readonly orphanSince = new Map<string, number>();
  /** Jobs deleted by this collector (for tests and logs). */
  deleted = 0;

  constructor(private readonly options: JobGarbageOptions) {}

  /**
   * One collection over the cached Jobs; Jobs younger than `listedAtMs` are skipped (their rollout may be unlisted).
   * @throws whatever the gateway client throws other than RolloutNotFound, and KubeErrors of deletions
   */
  async collect(jobs: Iterable<V1Job>, live: ReadonlyMap<string, string>, listedAtMs: number): Promise<void> {
    let lookups = 0;
    const seen = new Set<string>();
    for (const job of [...jobs]) {
      const uid = job.metadata?.uid ?? job.metadata?.name ?? "";
      seen.add(uid);
      if (job.metadata?.deletionTimestamp || this.settled.has(uid)) continue;
      const owner = jobOwner(job);
      if (owner !== undefined && live.get(owner.rolloutId) === owner.attemptId) continue;
      if (new Date(job.metadata?.creationTimestamp ?? 0).getTime() >= listedAtMs) continue;
      if (owner === undefined) {
        await this.deleteOrphan(job, uid, "managed Job names no rollout");
        continue;
      }
      if (lookups >= MAX_LOOKUPS_PER_PASS) continue;
      lookups++;
      await this.judge(job, uid, owner, await this.rolloutOf(owner.rolloutId));
    }
    for (const uid of this.settled) if (!seen.has(uid)) this.settled.delete(uid);
    for (const uid of this.orphanSince.keys()) if (!seen.has(uid)) this.orphanSince.delete(uid);
  }

  private async rolloutOf(rolloutId: string): Promise<Rollout | undefined> {
    try {
      return (await this.options.client.getRollout(rolloutId)).rollout;
    } catch (err) {
      if (err instanceof RolloutNotFound) return undefined;
      throw err;
    }
  }

  private async judge(
    job: V1Job,
    uid: string,
    owner: { rolloutId: string; attemptId: string },
    rollout: Rollout | undefined,
  ): Promise<void> {
    const finished = jobOutcome(job) !== undefined;
    if (rollout === undefined) {
      if (finished) await this.deleteOrphan(job, uid, "rollout not found");
      else await this.delete(job, "rollout deleted");
      return;
    }
    const sameAttempt = currentAttemptOf(rollout.status) === owner.attemptId;
    const state = rollout.status.state;
    if (sameAttempt && state === "succeeded") {
      this.settled.add(uid);
      return;
    }
    // Listed as queuing or running since: the pass that handles it is not this one.
    if (sameAttempt && (state === "queuing" || state === "running")) return;
    await this.delete(
      job,
      sameAttempt ? `rollout ${state}` : `attempt superseded by ${currentAttemptOf(rollout.status)}`,
    );
  }

  private async deleteOrphan(job: V1Job, uid: string, why: string): Promise<void> {
    const now = Date.now();
    const since = this.orphanSince.get(uid) ?? now;
    this.orphanSince.set(uid, since);
    if (now - since >= this.options.orphanGraceMs)
      await this.delete(job, `${why} for ${Math.round((now - since) / 1000)} s`);
  }

  private async delete(job: V1Job, why: string): Promise<void> {
    const jobName = job.metadata?.name ?? "";
    this.options.logger.info({ jobName, why }, "deleting Job");
    await this.options.api.deleteJob(jobName);
    this.deleted++;
  }
}
