/** @module A cache of the controller's Jobs: list, then watch from the last resourceVersion; re-list on 410 Gone. */
import type { V1Job } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type KubeApi, KubeError, type WatchEventType } from "./kube-api.js";

/** Options of {@link JobWatcher}. */
export interface JobWatcherOptions {
  api: KubeApi;
  labelSelector: string;
  logger: Logger;
  /** Called after a Job was added or changed (not for deletions), with the Job as now cached. */
  onChange: (job: V1Job) => void;
  /** Wait before re-watching after an error; doubles to `maxRetryDelayMs`. Default 200 ms. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

/** Jobs by name, as last listed or watched. */
export class JobWatcher {
  /** The cached Jobs by name. Read only. */
  readonly jobs = new Map<string, V1Job>();
  /** resourceVersion the next watch resumes from. */
  resourceVersion = "";
  /** Times the Jobs were listed (the first list, then one per 410 Gone or failed watch start). */
  lists = 0;
  /** Times a watch ended with 410 Gone. */
  expired = 0;
  private readonly options: JobWatcherOptions;
  private readonly log: Logger;
  private abort?: AbortController;
  private stopped = false;
  private synced = false;
  private failures = 0;
  /** Bumped whenever a watch is replaced; events and ends of an older watch are dropped. */
  private generation = 0;
  private syncWaiters: (() => void)[] = [];
  private timer?: NodeJS.Timeout;

  constructor(options: JobWatcherOptions) {
    this.options = options;
    this.log = options.logger;
  }

  /** True once the first list has filled the cache. */
  get isSynced(): boolean {
    return this.synced;
  }

  /** Lists, then watches; retries on its own until {@link JobWatcher.stop}. */
  start(): void {
    void this.relist();
  }

  /** Resolves once the cache has been filled by a list. */
  whenSynced(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Stops watching; the cache stays as it is. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.invalidate();
  }

  /** Resumes the watch from `resourceVersion` without a re-list (tests resume from an expired one). */
  resumeFrom(resourceVersion: string): void {
    this.invalidate();
    this.resourceVersion = resourceVersion;
    void this.watch();
  }

  /** Ends the current watch; its late events and end are ignored (they belong to an older generation). */
  private invalidate(): void {
    this.generation++;
    const current = this.abort;
    this.abort = undefined;
    current?.abort();
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    this.invalidate();
    const generation = this.generation;
    try {
      const list = await this.options.api.listJobs(this.options.labelSelector);
      if (generation !== this.generation) return;
      this.lists++;
      this.jobs.clear();
      for (const job of list.items) if (job.metadata?.name) this.jobs.set(job.metadata.name, job);
      this.resourceVersion = list.resourceVersion;
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
      this.failures = 0;
      this.log.debug({ jobs: this.jobs.size, resourceVersion: this.resourceVersion }, "listed Jobs");
      for (const job of list.items) this.options.onChange(job);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, "listing Jobs failed; retrying");
      this.retryLater(() => this.relist());
      return;
    }
    void this.watch();
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const generation = ++this.generation;
    const current = () => generation === this.generation && !this.stopped;
    const controller = await this.options.api.watchJobs(
      this.options.labelSelector,
      this.resourceVersion,
      (type, object) => {
        if (current()) this.onEvent(type, object);
      },
      (err) => {
        if (current()) this.onWatchEnd(err);
      },
    );
    if (current() && this.abort === undefined) this.abort = controller;
    else if (!current()) controller.abort();
  }

  private onWatchEnd(err: KubeError | null): void {
    this.abort = undefined;
    this.generation++;
    if (err === null) {
      // The server closed the watch (its timeout): resume from the last version seen.
      this.failures = 0;
      void this.watch();
      return;
    }
    if (err.kind === "gone") {
      this.expired++;
      this.log.info({ resourceVersion: this.resourceVersion }, "Job watch expired (410 Gone); listing again");
      void this.relist();
      return;
    }
    this.log.warn({ err: err.message }, "Job watch failed; watching again");
    this.retryLater(() => this.watch());
  }

  private onEvent(type: WatchEventType, object: Record<string, unknown>): void {
    if (type === "ERROR") {
      const code = (object as { code?: unknown }).code;
      const message = String((object as { message?: unknown }).message ?? "watch error");
      this.invalidate();
      this.onWatchEnd(new KubeError(code === 410 ? "gone" : "transient", Number(code) || 0, message));
      return;
    }
    const job = object as V1Job;
    const resourceVersion = job.metadata?.resourceVersion;
    if (resourceVersion) this.resourceVersion = resourceVersion;
    if (type === "BOOKMARK") return;
    const name = job.metadata?.name;
    if (name === undefined) return;
    if (type === "DELETED") {
      this.jobs.delete(name);
      return;
    }
    this.jobs.set(name, job);
    this.options.onChange(job);
  }

  private retryLater(action: () => Promise<void>): void {
    if (this.stopped) return;
    const base = this.options.retryDelayMs ?? 200;
    const delay = Math.min(this.options.maxRetryDelayMs ?? 5000, base * 2 ** this.failures);
    this.failures++;
    this.timer = setTimeout(() => void action(), delay);
  }
}
