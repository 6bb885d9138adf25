/**
 * @module The Kubernetes rollout controller: one Job per attempt, a periodic pass (gateway → cluster) plus a watch
 * that reports a finished Job as soon as it changes.
 */
import type { V1Job, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { GatewayClient } from "../../gateway/client.js";
import { currentAttemptOf, type Rollout } from "../../protocol/index.js";
import { agentKeyFor } from "../agent-credentials.js";
import { EnvMapError } from "../agent-env.js";
import type { ControllerConfig } from "../config.js";
import { type AttemptOutcome, isSuperseded, reportOutcome } from "../outcome.js";
import { SpawnLimiter } from "../spawn-limiter.js";
import { failureLog } from "./failure-log.js";
import { JobGarbage } from "./job-gc.js";
import { launchJob } from "./job-launch.js";
import { buildJobManifest, type JobSettings, KEY_SECRET_ANNOTATION, MANAGED_BY_SELECTOR } from "./job-manifest.js";
import { jobNameFor } from "./job-name.js";
import { type JobOutcome, jobOutcome, jobOwner } from "./job-status.js";
import { JobTemplateError } from "./job-template.js";
import { JobWatcher } from "./job-watch.js";
import { keySecretFor, keySecretNameFor } from "./key-secret.js";
import { type KubeApi, KubeError } from "./kube-api.js";
import { SecretGarbage } from "./secret-gc.js";

/** Options of {@link K8sController}. */
export interface K8sControllerOptions {
  client: GatewayClient;
  config: ControllerConfig;
  api: KubeApi;
  logger: Logger;
  /** `config.k8s.job_template` for rollouts whose config has none (the `job_template_file` text). */
  defaultJobTemplate?: string;
  /** Clock of the job-creation token bucket, ms (tests scale time with it); default `Date.now`. */
  limiterClock?: () => number;
  /** Called after an outcome was written to the gateway (measurement hook). */
  onReported?: (outcome: AttemptOutcome) => void;
}

/** An outcome and, when a Job ran, its name (a failed attempt's Job is deleted once reported). */
type JobAttemptOutcome = AttemptOutcome & { jobName?: string };

/** Longest wait (ms) between creation retries after `forbidden` or transient API errors. */
const MAX_CREATE_BACKOFF_MS = 30_000;

/**
 * Runs queued rollouts as Kubernetes Jobs. Crash-safe without local state: a Job's name is a function of
 * (rollout, attempt), so a restarted controller adopts its Jobs.
 */
export class K8sController {
  /** Jobs created by this controller (not adopted), for measurement. */
  jobsCreated = 0;
  /** Reconcile passes run (also those that failed). */
  passes = 0;
  private readonly client: GatewayClient;
  private readonly config: ControllerConfig;
  private readonly api: KubeApi;
  private readonly log: Logger;
  private readonly limiter: SpawnLimiter;
  private readonly watcher: JobWatcher;
  private readonly garbage: JobGarbage;
  private readonly secrets: SecretGarbage;
  private readonly settings: JobSettings;
  private readonly defaultJobTemplate?: string;
  private readonly onReported?: (outcome: AttemptOutcome) => void;
  /** Attempts known running on a Job here, `rolloutId` → attempt id; a finished Job of one is reported at once. */
  private readonly tracked = new Map<string, string>();
  /** Outcomes not yet taken by the gateway, by rollout id. */
  private readonly finished = new Map<string, JobAttemptOutcome>();
  /** Rendered manifests of queuing attempts waiting for a token, by `rolloutId` NUL `attemptId`: rendered once. */
  private readonly manifests = new Map<string, V1Job>();
  /** Job uids whose outcome is being or was reported (watch and pass may both see a finished Job). */
  private readonly reporting = new Set<string>();
  private createBackoffMs = 0;
  private createBlockedUntilMs = 0;
  private loop?: Promise<void>;
  private passTail: Promise<void> = Promise.resolve();
  private stopping = false;
  private wakeNow: () => void = () => {};

  /** @param options - gateway client, resolved config, Kubernetes API, logger */
  constructor(options: K8sControllerOptions) {
    this.client = options.client;
    this.config = options.config;
    this.api = options.api;
    this.log = options.logger.child({ component: "k8s-controller" });
    this.defaultJobTemplate = options.defaultJobTemplate;
    this.onReported = options.onReported;
    const perSecond = this.config.max_jobs_per_minute / 60;
    this.limiter = new SpawnLimiter(perSecond, this.config.job_burst, options.limiterClock);
    this.settings = {
      namespace: this.api.namespace,
      agentUrl: this.config.agent_url ?? this.config.gateway_url,
      legacySecretName: this.config.key_secret_name,
      ttlAfterFinishedSeconds: this.config.ttl_after_finished_seconds,
      envMap: this.config.k8s_env_map,
      standardEnv: this.config.standard_env,
    };
    this.watcher = new JobWatcher({
      api: this.api,
      labelSelector: MANAGED_BY_SELECTOR,
      logger: this.log,
      onChange: (job) => this.onJobChange(job),
    });
    this.garbage = new JobGarbage({
      api: this.api,
      client: this.client,
      logger: this.log,
      orphanGraceMs: this.config.orphan_grace_seconds * 1000,
    });
    this.secrets = new SecretGarbage({
      api: this.api,
      logger: this.log,
      orphanGraceMs: this.config.orphan_grace_seconds * 1000,
      legacySecretName: this.config.key_secret_name,
    });
  }

  /** The watched Jobs (tests read the watch counters from it). */
  get jobWatcher(): JobWatcher {
    return this.watcher;
  }

  /** Starts the watch and the periodic pass (every `poll_interval_seconds`). */
  start(): void {
    if (this.loop !== undefined) return;
    this.log.info(
      { namespace: this.api.namespace, maxJobsPerMinute: this.config.max_jobs_per_minute },
      "controller started",
    );
    this.watcher.start();
    this.loop = this.runLoop();
  }

  /**
   * Stops the watch and the loop and reports what is pending. Jobs keep running: the next controller adopts them.
   */
  async shutdown(): Promise<void> {
    this.stopping = true;
    this.watcher.stop();
    this.wakeNow();
    await this.loop;
    await this.passTail;
    for (let tries = 0; tries < 3 && this.finished.size > 0; tries++) await this.flushFinished();
    this.log.info({ unreported: this.finished.size }, "controller stopped");
  }

  /**
   * One pass (never overlapping): 1. report pending outcomes; 2. report finished Jobs, fail those gone; 3. adopt or
   * create (rate limited) Jobs for queuing rollouts; 4. delete unwanted Jobs; 5. hand or delete unowned key Secrets.
   * @throws whatever the gateway client throws (the loop logs it and retries next pass)
   */
  reconcileOnce(): Promise<void> {
    return this.serial(() => this.runPass());
  }

  private serial(task: () => Promise<void>): Promise<void> {
    const run = this.passTail.then(task);
    this.passTail = run.catch(() => {});
    return run;
  }

  private async runPass(): Promise<void> {
    if (!this.watcher.isSynced) {
      // No Jobs known yet (the API server may be down): still fail rollouts whose template cannot render.
      await this.validateQueuing();
      return;
    }
    await this.flushFinished();
    const listedAtMs = Date.now();
    const running = await this.client.listAllRollouts({ states: ["running"] }, this.config.list_page_size);
    const queuing = await this.client.listRollouts({ states: ["queuing"], limit: this.config.list_page_size });
    await this.reconcileRunning(running);
    await this.startQueuing(queuing);
    await this.flushFinished();
    const live = new Map<string, string>();
    for (const r of [...running, ...queuing]) live.set(r.rollout_id, currentAttemptOf(r.status));
    await this.garbage.collect(this.watcher.jobs.values(), live, listedAtMs);
    await this.secrets.collect(this.watcher.jobs);
  }

  private async runLoop(): Promise<void> {
    while (!this.stopping) {
      this.passes++;
      try {
        await this.reconcileOnce();
      } catch (err) {
        this.log.error({ err }, "reconcile pass failed");
      }
      const pollMs = this.config.poll_interval_seconds * 1000;
      const waitMs = this.limiter.msUntilNext();
      await this.sleep(waitMs > 0 ? Math.min(pollMs, Math.max(waitMs, 10)) : pollMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.wakeNow = () => {};
        resolve();
      }
      this.wakeNow = done;
    });
  }

  /** Running rollouts on a Job of ours: report a finished Job, fail the rollout when its Job is gone. */
  private async reconcileRunning(running: Rollout[]): Promise<void> {
    for (const rollout of running) {
      const jobName = rollout.status.k8s_job_name;
      // A running rollout without a Job name was started by another kind of controller.
      if (jobName === null) continue;
      const rolloutId = rollout.rollout_id;
      const attemptId = currentAttemptOf(rollout.status);
      if (this.finished.has(rolloutId)) continue;
      this.tracked.set(rolloutId, attemptId);
      // The cache may lag a Job created a moment ago: ask the API server before calling it gone.
      const job = this.watcher.jobs.get(jobName) ?? (await this.api.getJob(jobName));
      if (job === undefined || job.metadata?.deletionTimestamp) {
        this.log.warn({ rolloutId, attemptId, jobName }, "Job of a running rollout is gone");
        this.tracked.delete(rolloutId);
        this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason: `Job ${jobName} disappeared` });
        continue;
      }
      const outcome = jobOutcome(job);
      if (outcome !== undefined) await this.finishAttempt(rolloutId, attemptId, job, outcome);
    }
  }

  /** A Job changed (watch or list): report it at once when it finished and its attempt is tracked here. */
  private onJobChange(job: V1Job): void {
    const owner = jobOwner(job);
    if (owner === undefined || this.tracked.get(owner.rolloutId) !== owner.attemptId) return;
    const outcome = jobOutcome(job);
    if (outcome === undefined || this.stopping) return;
    void this.serial(async () => {
      await this.finishAttempt(owner.rolloutId, owner.attemptId, job, outcome);
      await this.flushFinished();
    }).catch((err) => this.log.warn({ err, rolloutId: owner.rolloutId }, "reporting a finished Job failed"));
  }

  /** Turns a finished Job into a pending outcome (with the pod's last log lines when it failed). */
  private async finishAttempt(rolloutId: string, attemptId: string, job: V1Job, outcome: JobOutcome): Promise<void> {
    const uid = job.metadata?.uid ?? job.metadata?.name ?? "";
    if (this.reporting.has(uid)) return;
    this.reporting.add(uid);
    this.tracked.delete(rolloutId);
    const jobName = job.metadata?.name ?? "";
    if (outcome.state === "succeeded") {
      this.log.info({ rolloutId, attemptId, jobName }, "Job complete");
      this.finished.set(rolloutId, { rolloutId, attemptId, state: "succeeded", reason: null, jobName });
      return;
    }
    this.log.warn({ rolloutId, attemptId, jobName, reason: outcome.reason }, "Job failed");
    const log = await failureLog(this.api, jobName, outcome, this.config.pod_log_lines);
    this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason: outcome.reason, log, jobName });
  }

  /** Renders the queuing rollouts' templates, failing those that do not render to a Job. */
  private async validateQueuing(): Promise<void> {
    const queuing = await this.client.listRollouts({ states: ["queuing"], limit: this.config.list_page_size });
    for (const rollout of queuing) {
      const attemptId = currentAttemptOf(rollout.status);
      const key = `${rollout.rollout_id}\u0000${attemptId}`;
      if (this.manifests.has(key) || this.finished.has(rollout.rollout_id)) continue;
      const manifest = this.manifestOf(rollout, attemptId);
      if (manifest !== undefined) this.manifests.set(key, manifest);
    }
    await this.flushFinished();
  }

  /** Creates or adopts a Job for each queuing rollout, within the rate limit. */
  private async startQueuing(queuing: Rollout[]): Promise<void> {
    const waiting = new Set<string>();
    for (const rollout of queuing) {
      if (this.stopping) return;
      if (this.finished.has(rollout.rollout_id)) continue;
      const attemptId = currentAttemptOf(rollout.status);
      const jobName = jobNameFor(rollout.rollout_id, attemptId);
      const existing = this.watcher.jobs.get(jobName);
      if (existing !== undefined) {
        // A Job being deleted (a previous run's, say) is waited out, not adopted.
        if (!existing.metadata?.deletionTimestamp) await this.adopt(rollout, attemptId, existing);
        continue;
      }
      // Render first: a bad template fails its rollout even while creation is rate limited or the cluster is down.
      const key = `${rollout.rollout_id}\u0000${attemptId}`;
      const manifest = this.manifests.get(key) ?? this.manifestOf(rollout, attemptId);
      if (manifest === undefined) continue;
      if (Date.now() < this.createBlockedUntilMs || !this.limiter.tryTake()) {
        this.manifests.set(key, manifest);
        waiting.add(key);
        continue;
      }
      this.manifests.delete(key);
      await this.create(rollout, attemptId, manifest);
    }
    for (const key of this.manifests.keys()) if (!waiting.has(key)) this.manifests.delete(key);
  }

  /** The Job manifest, or undefined after failing the rollout for a template that does not render to a Job. */
  private manifestOf(rollout: Rollout, attemptId: string): V1Job | undefined {
    const withTemplate =
      rollout.config.k8s === null && this.defaultJobTemplate !== undefined
        ? { ...rollout, config: { ...rollout.config, k8s: { job_template: this.defaultJobTemplate } } }
        : rollout;
    try {
      // An open gateway (no key) gives agents no key: nothing secret, no Secret.
      const secretName = this.config.key === "" ? null : keySecretNameFor(jobNameFor(rollout.rollout_id, attemptId));
      return buildJobManifest(withTemplate, attemptId, this.settings, secretName) as V1Job;
    } catch (err) {
      if (!(err instanceof JobTemplateError || err instanceof EnvMapError)) throw err;
      const reason = `Invalid Job spec: ${err.message}`;
      this.log.warn({ rolloutId: rollout.rollout_id, attemptId, reason }, "rollout cannot be started");
      this.finished.set(rollout.rollout_id, { rolloutId: rollout.rollout_id, attemptId, state: "failed", reason });
      return undefined;
    }
  }

  private async create(rollout: Rollout, attemptId: string, manifest: V1Job): Promise<void> {
    const rolloutId = rollout.rollout_id;
    const jobName = manifest.metadata?.name ?? "";
    try {
      const job = await launchJob(this.api, manifest, this.keySecretOf(rollout, attemptId, manifest), this.log);
      this.jobsCreated++;
      this.createBackoffMs = 0;
      this.log.info({ rolloutId, attemptId, jobName }, "Job created");
      await this.adopt(rollout, attemptId, job);
    } catch (err) {
      if (!(err instanceof KubeError)) throw err;
      if (err.kind === "conflict") {
        const job = await this.api.getJob(jobName);
        if (job !== undefined) await this.adopt(rollout, attemptId, job);
        return;
      }
      if (err.kind === "invalid") {
        const reason = `Invalid Job spec: ${err.message}`;
        this.log.warn({ rolloutId, attemptId, reason }, "API server refused the Job");
        this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason });
        return;
      }
      this.backOffCreation(err, rolloutId);
    }
  }

  /** The key Secret, its token minted now so it expires counting from the Job's creation; undefined without a key. */
  private keySecretOf(rollout: Rollout, attemptId: string, manifest: V1Job): V1Secret | undefined {
    const secretName = manifest.metadata?.annotations?.[KEY_SECRET_ANNOTATION];
    if (secretName === undefined) return undefined;
    const agentKey = agentKeyFor(this.config.key, rollout, attemptId);
    return keySecretFor(secretName, rollout, attemptId, this.settings, agentKey);
  }

  /** After `forbidden` or a transient error, no Job is created for a while (doubling up to 30 s). */
  private backOffCreation(err: KubeError, rolloutId: string): void {
    this.createBackoffMs = Math.min(MAX_CREATE_BACKOFF_MS, Math.max(500, this.createBackoffMs * 2));
    this.createBlockedUntilMs = Date.now() + this.createBackoffMs;
    const level = err.kind === "forbidden" ? "error" : "warn";
    this.log[level](
      { rolloutId, err: err.message, retryInMs: this.createBackoffMs },
      "could not create Job; will retry",
    );
  }

  /** Adopts an existing Job (healing a crash between create and patch), reporting it at once if finished. */
  private async adopt(rollout: Rollout, attemptId: string, job: V1Job): Promise<void> {
    const rolloutId = rollout.rollout_id;
    const jobName = job.metadata?.name ?? "";
    const owner = jobOwner(job);
    if (owner?.rolloutId !== rolloutId || owner.attemptId !== attemptId) {
      const reason = `Job ${jobName} exists and belongs to ${owner ? `rollout ${owner.rolloutId}` : "no rollout"}`;
      this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason });
      return;
    }
    try {
      const status = { state: "running" as const, last_attempt_id: attemptId, k8s_job_name: jobName };
      await this.client.patchRollout(rolloutId, { status });
    } catch (err) {
      if (!isSuperseded(err)) throw err;
      this.log.info(
        { rolloutId, attemptId, jobName, reason: err.message },
        "rollout changed elsewhere; deleting its Job",
      );
      await this.api.deleteJob(jobName);
      return;
    }
    this.tracked.set(rolloutId, attemptId);
    const outcome = jobOutcome(this.watcher.jobs.get(jobName) ?? job);
    if (outcome !== undefined) await this.finishAttempt(rolloutId, attemptId, job, outcome);
  }

  /** Reports every pending outcome; a failed attempt's Job is deleted once reported. */
  private async flushFinished(): Promise<void> {
    for (const outcome of [...this.finished.values()]) {
      let result: Awaited<ReturnType<typeof reportOutcome>>;
      try {
        result = await reportOutcome(this.client, outcome);
      } catch (err) {
        this.log.warn({ err, rolloutId: outcome.rolloutId }, "could not report rollout outcome; will retry");
        continue;
      }
      this.finished.delete(outcome.rolloutId);
      if (result === "superseded") {
        this.log.warn(
          { rolloutId: outcome.rolloutId, attemptId: outcome.attemptId },
          "rollout changed elsewhere; outcome dropped",
        );
      } else {
        this.onReported?.(outcome);
      }
      if (outcome.state === "failed" && outcome.jobName !== undefined) await this.deleteQuietly(outcome.jobName);
    }
  }

  private async deleteQuietly(jobName: string): Promise<void> {
    try {
      await this.api.deleteJob(jobName);
    } catch (err) {
      this.log.warn({ jobName, err: (err as Error).message }, "could not delete Job; the collector retries");
    }
  }
}
