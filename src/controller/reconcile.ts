/** @module The local rollout controller: a reconcile loop with the gateway as the source of truth. */

import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "pino";
import { makeDirs } from "../fs/make-dirs.js";
import type { GatewayClient } from "../gateway/client.js";
import { GatewayUnreachable } from "../gateway/client-errors.js";
import { currentAttemptOf, ResourceNotFound, type Rollout } from "../protocol/index.js";
import { agentKeyFor } from "./agent-credentials.js";
import { buildAgentEnv, EnvMapError } from "./agent-env.js";
import type { ControllerConfig } from "./config.js";
import { checkLaunchAllowed } from "./launch-policy.js";
import {
  AgentProcess,
  type ExitInfo,
  killGroupWithGrace,
  LaunchError,
  processAlive,
  readExitFile,
  readStartMarker,
  resolveLaunch,
} from "./local.js";
import { type AttemptOutcome, describeExit, isSuperseded, type KillCause, reportOutcome } from "./outcome.js";
import { type ResourceEnv, resolveResourceEnv } from "./resource-env.js";
import { RunnerPool } from "./runner-pool.js";
import { SpawnLimiter } from "./spawn-limiter.js";
import { ControllerStateFile, type OwnedProcess } from "./state-file.js";

/** Options of {@link LocalController}. */
export interface LocalControllerOptions {
  client: GatewayClient;
  config: ControllerConfig;
  logger: Logger;
  /** Variables every agent inherits (the CLI passes the controller's environment); default none. */
  baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Test hooks where a kill leaves the most behind; a throw ends the pass there, as a kill would. */
  killPoints?: { afterMarkedRunning?(rolloutId: string): void; afterSpawn?(rolloutId: string): void };
}

/** A live agent process this controller answers for: spawned by it, or adopted from a previous controller. */
interface Owned {
  rolloutId: string;
  record: OwnedProcess;
  /** Undefined for an adopted process (not our child: we can see it alive, not its exit status). */
  process?: Pick<AgentProcess, "pid" | "exited" | "tail" | "kill">;
  cause: KillCause;
  /** The rollout was finished or deleted elsewhere: kill quietly, report nothing. */
  cancelled: boolean;
  timer?: NodeJS.Timeout;
  /** Settles after the exit was recorded. */
  done?: Promise<void>;
}

/**
 * Runs queued rollouts as local processes. Crash-safe: owned pids persist in the state file and every decision is
 * re-derived from the gateway each pass, so a repeated pass or a restart is harmless.
 */
export class LocalController {
  private readonly client: GatewayClient;
  private readonly config: ControllerConfig;
  private readonly log: Logger;
  private readonly baseEnv: Readonly<Record<string, string | undefined>>;
  private readonly killPoints: NonNullable<LocalControllerOptions["killPoints"]>;
  /** Rollouts found running on an attempt that was never spawned (a controller killed in between): started again. */
  private readonly unstarted = new Map<string, Rollout>();
  private readonly limiter: SpawnLimiter;
  /** Runners of `agent_class` agents when `reuse_processes` is on. */
  private readonly runners: RunnerPool | null;
  private readonly stateFile: ControllerStateFile;
  /** Processes persisted in the state file (live ones and those whose outcome is not reported yet). */
  private readonly records: Map<string, OwnedProcess>;
  private readonly owned = new Map<string, Owned>();
  /** Outcomes waiting to be reported, by rollout id; retried every pass until the gateway takes them. */
  private readonly finished = new Map<string, AttemptOutcome>();
  private loop?: Promise<void>;
  private passTail: Promise<void> = Promise.resolve();
  private stopping = false;
  /** When the gateway became unreachable (epoch ms), null while it answers. */
  private gatewayDownSince: number | null = null;
  private abandoned = false;
  private wakePending = false;
  /** When the leases were last renewed (ms since the epoch); 0: never. */
  private leasesRenewedAtMs = 0;
  private wakeNow: () => void = () => {};

  /** Reads the state file; nothing spawns before {@link LocalController.start}. @throws {StateFileInvalid} */
  constructor(options: LocalControllerOptions) {
    this.client = options.client;
    this.config = options.config;
    this.log = options.logger.child({ component: "controller" });
    this.baseEnv = options.baseEnv ?? {};
    this.killPoints = options.killPoints ?? {};
    this.limiter = new SpawnLimiter(this.config.spawn_rate_per_second, this.config.spawn_burst);
    this.runners = this.config.reuse_processes ? new RunnerPool(this.config.pool_size) : null;
    this.stateFile = new ControllerStateFile(this.config.state_file);
    this.records = this.stateFile.load();
  }

  /** Number of agent processes alive and owned right now. */
  get liveCount(): number {
    return this.owned.size;
  }

  /** Starts the reconcile loop: a pass every `poll_interval_seconds`, and at once after any process exits. */
  start(): void {
    if (this.loop !== undefined) return;
    this.log.info({ poolSize: this.config.pool_size, gatewayUrl: this.config.gateway_url }, "controller started");
    this.loop = this.runLoop();
  }

  /**
   * One idempotent pass: 1. report exited processes; 2. fail running rollouts whose process is gone (adopting live
   * ones), kill those finished elsewhere; 3. spawn queuing rollouts up to the pool size.
   * @throws whatever the gateway client throws (the loop logs it and retries next pass)
   */
  reconcileOnce(): Promise<void> {
    // Passes never overlap: a second call waits for the one in flight.
    const pass = this.passTail.then(() => this.runPass());
    this.passTail = pass.catch(() => {});
    return pass;
  }

  private async runPass(): Promise<void> {
    this.reapAdopted();
    await this.flushFinished();
    const listedAtMs = Date.now();
    const running = await this.client.listAllRollouts({ states: ["running"] }, this.config.list_page_size);
    await this.reconcileRunning(running, listedAtMs);
    await this.renewLeases();
    await this.flushFinished();
    await this.startQueuing();
    await this.flushFinished();
  }

  /** Stops the loop, kills every process group and fails its rollout with "controller shutdown". */
  async shutdown(waitMs = this.config.kill_grace_seconds * 1000 + 5000): Promise<void> {
    await this.stopLoop();
    if (this.abandoned) return;
    const graceMs = this.config.kill_grace_seconds * 1000;
    for (const owned of this.owned.values()) this.kill(owned, "shutdown", graceMs);
    const deadline = Date.now() + waitMs;
    await Promise.all([...this.owned.values()].map((o) => o.done).filter((d) => d !== undefined));
    while ([...this.owned.values()].length > 0 && Date.now() < deadline) {
      this.reapAdopted();
      if (this.owned.size > 0) await new Promise((r) => setTimeout(r, 50));
    }
    for (let tries = 0; tries < 3 && this.finished.size > 0; tries++) await this.flushFinished();
    this.runners?.close();
    this.log.info({ unreported: this.finished.size }, "controller stopped");
  }

  /** Stops as if crashed: nothing killed or reported; the state file keeps the processes for the next controller. */
  async abandon(): Promise<void> {
    await this.stopLoop();
    this.abandoned = true;
    for (const owned of this.owned.values()) clearTimeout(owned.timer);
    // As if this process had died: runners lose their channel, finish the run in hand and exit.
    this.runners?.close();
  }

  private async stopLoop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
  }

  /** An unreachable gateway logs one warning when it goes and one info when back; passes in between at debug. */
  private notePassFailed(err: unknown): void {
    if (!(err instanceof GatewayUnreachable)) {
      this.log.error({ err }, "reconcile pass failed");
      return;
    }
    if (this.gatewayDownSince !== null) {
      this.log.debug({ reason: err.message }, "gateway still unreachable");
      return;
    }
    this.gatewayDownSince = Date.now();
    const everyS = this.config.poll_interval_seconds;
    this.log.warn({ reason: err.message }, `gateway unreachable; retrying every ${everyS} s`);
  }

  /** Logs the gateway's return after {@link notePassFailed} saw it unreachable. */
  private noteGatewayReachable(): void {
    if (this.gatewayDownSince === null) return;
    const downS = Math.round((Date.now() - this.gatewayDownSince) / 1000);
    this.gatewayDownSince = null;
    this.log.info({ downS }, "gateway reachable again");
  }

  private async runLoop(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.reconcileOnce();
        this.noteGatewayReachable();
      } catch (err) {
        this.notePassFailed(err);
      }
      const pollMs = this.config.poll_interval_seconds * 1000;
      const spawnWaitMs = this.limiter.msUntilNext();
      await this.sleep(spawnWaitMs > 0 ? Math.min(pollMs, spawnWaitMs) : pollMs);
    }
  }

  private wake(): void {
    this.wakePending = true;
    this.wakeNow();
  }

  private sleep(ms: number): Promise<void> {
    if (this.wakePending || this.stopping) {
      this.wakePending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.wakePending = false;
        self.wakeNow = () => {};
        resolve();
      }
      this.wakeNow = done;
    });
  }

  /** Adopts or fails running rollouts this controller holds no live process for; cancels processes of others. */
  private async reconcileRunning(running: Rollout[], listedAtMs: number): Promise<void> {
    const runningIds = new Map(running.map((r) => [r.rollout_id, r.status.last_attempt_id]));
    for (const owned of this.owned.values()) {
      const stillOurs = runningIds.get(owned.rolloutId) === owned.record.attempt_id;
      if (!stillOurs && owned.record.started_at_ms < listedAtMs && !owned.cancelled) {
        this.log.info({ rolloutId: owned.rolloutId }, "rollout no longer running here; killing its process");
        owned.cancelled = true;
        this.kill(owned, null, this.config.kill_grace_seconds * 1000);
      }
    }
    for (const rollout of running) {
      const rolloutId = rollout.rollout_id;
      if (this.owned.has(rolloutId) || this.finished.has(rolloutId) || this.unstarted.has(rolloutId)) continue;
      this.reconcileUnowned(rollout);
    }
    let changed = false;
    for (const rolloutId of this.records.keys()) {
      const busy = this.owned.has(rolloutId) || this.finished.has(rolloutId) || this.unstarted.has(rolloutId);
      if (!busy && !runningIds.has(rolloutId)) changed = this.records.delete(rolloutId) || changed;
    }
    if (changed) this.saveState();
  }

  /**
   * A running rollout with no live process here: 1. a state record with a live pid → adopt; 2. an exit file →
   * report it; 3. no record, no start marker → never spawned, start again; 4. no record, marker with a live pid →
   * adopt; 5. else → "controller lost the process".
   */
  private reconcileUnowned(rollout: Rollout): void {
    const rolloutId = rollout.rollout_id;
    const attemptId = currentAttemptOf(rollout.status);
    const stored = this.records.get(rolloutId);
    const record = stored?.attempt_id === attemptId ? stored : undefined;
    // A live pid with this attempt's record is taken to be the agent (pid reuse within one run is not guarded
    // against: it would need the process start time, which Node does not expose portably).
    if (record !== undefined && processAlive(record.pid)) {
      this.adopt(rolloutId, record);
      return;
    }
    const exitFile = this.exitFileOf(rolloutId, attemptId);
    const exit = readExitFile(exitFile);
    const timeoutSeconds = record?.timeout_seconds ?? rollout.config.timeout_seconds;
    if (exit !== undefined) {
      // The agent ended while no controller watched it; its wrapper kept the status.
      const { state, reason } = describeExit(exit, null, timeoutSeconds);
      this.log.info({ rolloutId, attemptId, state, reason }, "agent exited while the controller was away");
      this.finished.set(rolloutId, { rolloutId, attemptId, state, reason });
      return;
    }
    const marker = record === undefined ? readStartMarker(exitFile) : undefined;
    if (marker?.state === "absent") {
      this.log.warn({ rolloutId, attemptId }, "rollout marked running but never started; starting it");
      this.unstarted.set(rolloutId, rollout);
      return;
    }
    if (marker?.state === "started" && processAlive(marker.pid)) {
      const found = {
        attempt_id: attemptId,
        pid: marker.pid,
        started_at_ms: marker.atMs,
        timeout_seconds: timeoutSeconds,
      };
      this.records.set(rolloutId, found);
      this.saveState();
      this.adopt(rolloutId, found);
      return;
    }
    this.log.error({ rolloutId, attemptId, pid: record?.pid }, "controller lost the process");
    this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason: "controller lost the process" });
  }

  /** Renews leases at most every third of `lease_seconds`, so one missed renewal never lets a lease run out. */
  private async renewLeases(): Promise<void> {
    const leaseSeconds = this.config.lease_seconds;
    if (leaseSeconds === 0 || this.owned.size === 0) return;
    if (Date.now() - this.leasesRenewedAtMs < (leaseSeconds * 1000) / 3) return;
    const leases = [...this.owned.values()]
      .filter((owned) => !owned.cancelled)
      .map((owned) => ({ rollout_id: owned.rolloutId, attempt_id: owned.record.attempt_id }));
    try {
      await this.client.renewLeases(leases, leaseSeconds);
      this.leasesRenewedAtMs = Date.now();
    } catch (err) {
      this.log.warn({ err, count: leases.length }, "could not renew rollout leases; will retry");
    }
  }

  /** Watches a live process a previous controller spawned: its timeout still applies; its exit is reported lost. */
  private adopt(rolloutId: string, record: OwnedProcess): void {
    const owned: Owned = { rolloutId, record, cause: null, cancelled: false };
    this.owned.set(rolloutId, owned);
    const remainingMs = record.started_at_ms + record.timeout_seconds * 1000 - Date.now();
    owned.timer = setTimeout(() => this.onTimeout(owned), clampTimerMs(remainingMs));
    this.log.info({ rolloutId, attemptId: record.attempt_id, pid: record.pid }, "adopted live rollout process");
  }

  /** Gone adopted processes: their wrapper's status, else lost with the old controller. */
  private reapAdopted(): void {
    for (const owned of [...this.owned.values()]) {
      if (owned.process !== undefined || processAlive(owned.record.pid)) continue;
      const exit = readExitFile(this.exitFileOf(owned.rolloutId, owned.record.attempt_id));
      this.recordExit(owned, exit ?? { code: null, signal: null }, owned.cause ?? (exit ? null : "lost"));
    }
  }

  /** `exits/` beside the state file, so a restarted controller reads what earlier agents left. */
  private exitFileOf(rolloutId: string, attemptId: string): string {
    const name = `${encodeURIComponent(rolloutId)}.${encodeURIComponent(attemptId)}.exit`;
    return join(dirname(this.config.state_file), "exits", name);
  }

  private async startQueuing(): Promise<void> {
    let free = this.config.pool_size - this.owned.size;
    if (free <= 0) return;
    // Fetch only as many as can start now: listing the whole queue every pass would dominate a pass's cost.
    const limit = Math.min(free, this.config.list_page_size);
    const queuing = await this.client.listRollouts({ states: ["queuing"], limit });
    // Attempts marked running that no process ever ran go first: they were taken from the queue before the others.
    for (const rollout of [...this.unstarted.values(), ...queuing]) {
      if (free <= 0 || this.stopping) return;
      if (this.owned.has(rollout.rollout_id) || this.finished.has(rollout.rollout_id)) continue;
      // Only a new process spends a spawn token: a rollout handed to an idle runner starts none. One that needs a
      // token when none is left waits for a later pass; the rollouts after it may still go to idle runners.
      const reuses = this.idleRunnerFor(rollout);
      if (!reuses && !this.limiter.tryTake()) continue;
      this.unstarted.delete(rollout.rollout_id);
      if (await this.startOne(rollout, !reuses)) free--;
    }
  }

  /** Whether starting `rollout` would hand it to an idle runner (`reuse_processes`, an `agent_class` rollout). */
  private idleRunnerFor(rollout: Rollout): boolean {
    if (this.runners === null) return false;
    try {
      const launch = resolveLaunch(rollout.config.local ?? this.config.local, { python: this.config.python });
      if (launch.agentClass === undefined) return false;
      const target = { node: launch.file, modulePath: launch.agentClass.modulePath };
      return this.runners.hasIdle(target, this.config.cwd);
    } catch {
      return false; // startOne fails it with the reason
    }
  }

  /** Patches the rollout running, then spawns or leases its process; true when one started. */
  private async startOne(rollout: Rollout, tokenTaken: boolean): Promise<boolean> {
    const rolloutId = rollout.rollout_id;
    const attemptId = currentAttemptOf(rollout.status);
    const local = rollout.config.local ?? this.config.local;
    let launch: ReturnType<typeof resolveLaunch>;
    let env: Record<string, string>;
    let resources: ResourceEnv;
    try {
      checkLaunchAllowed(rollout.config.local, this.config);
      launch = resolveLaunch(local, { python: this.config.python });
      // The agent gets a token for this attempt only, never the controller's admin key.
      const gateway = { url: this.config.gateway_url, key: agentKeyFor(this.config.key, rollout, attemptId) };
      env = buildAgentEnv(rollout, attemptId, gateway, local?.env_map ?? {}, this.baseEnv, this.config.standard_env);
      resources = await resolveResourceEnv(this.client, rollout, this.config);
      env = { ...env, ...resources.env };
    } catch (err) {
      if (!(err instanceof LaunchError || err instanceof EnvMapError || err instanceof ResourceNotFound)) throw err;
      this.log.warn({ rolloutId, attemptId, reason: err.message }, "rollout cannot be started");
      this.finished.set(rolloutId, { rolloutId, attemptId, state: "failed", reason: err.message });
      return false;
    }
    try {
      await this.client.patchRollout(rolloutId, { status: { state: "running", last_attempt_id: attemptId } });
    } catch (err) {
      if (isSuperseded(err)) {
        this.log.info({ rolloutId, attemptId, reason: err.message }, "rollout taken or changed elsewhere; skipped");
        return false;
      }
      throw err;
    }
    await this.leaseStarted(rolloutId, attemptId);
    this.killPoints.afterMarkedRunning?.(rolloutId);
    if (Object.keys(resources.versions).length > 0) {
      const data = { versions: resources.versions };
      await this.client.postEvent(rolloutId, attemptId, { event_type: "resources", data });
    }
    this.spawnOwned(rollout, attemptId, launch, env, tokenTaken);
    return true;
  }

  /** Leases at once, so a controller killed before its next pass still leaves a lease that runs out. */
  private async leaseStarted(rolloutId: string, attemptId: string): Promise<void> {
    if (this.config.lease_seconds === 0) return;
    try {
      await this.client.renewLeases([{ rollout_id: rolloutId, attempt_id: attemptId }], this.config.lease_seconds);
    } catch (err) {
      this.log.warn({ err, rolloutId }, "could not lease the started rollout; will retry");
    }
  }

  private spawnOwned(
    rollout: Rollout,
    attemptId: string,
    launch: ReturnType<typeof resolveLaunch>,
    env: Record<string, string>,
    tokenTaken: boolean,
  ): void {
    const rolloutId = rollout.rollout_id;
    const options = {
      env,
      cwd: this.config.cwd,
      logTailBytes: this.config.log_tail_bytes,
      exitFile: this.exitFileOf(rollout.rollout_id, attemptId),
    };
    // The start marker: created before the spawn, filled with the pid by the exit wrapper (see readStartMarker).
    makeDirs(dirname(options.exitFile));
    writeFileSync(`${options.exitFile}.pid`, "");
    const lease =
      this.runners !== null && launch.agentClass !== undefined
        ? this.runners.lease({ node: launch.file, ...launch.agentClass }, options)
        : undefined;
    const agent = lease ?? AgentProcess.spawn(launch, options);
    // The idle runner expected when this start was counted died meanwhile, so the lease started a process.
    if (!tokenTaken && lease?.started) this.limiter.charge();
    this.killPoints.afterSpawn?.(rolloutId);
    const record: OwnedProcess = {
      attempt_id: attemptId,
      // A failed spawn has no pid; its record is never saved and never used to signal (killGroup refuses pid < 2).
      pid: agent.pid ?? 0,
      started_at_ms: Date.now(),
      timeout_seconds: rollout.config.timeout_seconds,
    };
    const owned: Owned = { rolloutId, record, process: agent, cause: null, cancelled: false };
    this.owned.set(rolloutId, owned);
    owned.timer = setTimeout(() => this.onTimeout(owned), clampTimerMs(record.timeout_seconds * 1000));
    owned.done = agent.exited.then((info) => this.recordExit(owned, info, owned.cause));
    if (agent.pid !== undefined) {
      this.records.set(rolloutId, record);
      this.saveState();
    }
    this.log.info({ rolloutId, attemptId, pid: agent.pid }, "started rollout process");
  }

  private onTimeout(owned: Owned): void {
    const { rolloutId, record } = owned;
    this.log.warn(
      { rolloutId, attemptId: record.attempt_id, pid: record.pid },
      "rollout timed out; killing its process group",
    );
    this.kill(owned, "timeout", this.config.kill_grace_seconds * 1000);
  }

  /** Kills an owned process group (SIGTERM, SIGKILL after the grace period); the first cause given sticks. */
  private kill(owned: Owned, cause: KillCause, graceMs: number): void {
    if (owned.cause === null) owned.cause = cause;
    if (owned.process !== undefined) {
      owned.process.kill(graceMs);
      return;
    }
    killGroupWithGrace(owned.record.pid, graceMs);
  }

  /** Turns an exit into an outcome to report, frees the pool slot and wakes the loop. */
  private recordExit(owned: Owned, info: ExitInfo, cause: KillCause): void {
    if (this.abandoned || this.owned.get(owned.rolloutId) !== owned) return;
    clearTimeout(owned.timer);
    this.owned.delete(owned.rolloutId);
    const { rolloutId, record } = owned;
    if (owned.cancelled) {
      this.removeAttemptFiles(rolloutId, record.attempt_id);
      this.records.delete(rolloutId);
      this.saveState();
    } else {
      const { state, reason } = describeExit(info, cause, record.timeout_seconds);
      const outcome: AttemptOutcome = { rolloutId, attemptId: record.attempt_id, state, reason };
      if (state === "failed" && owned.process !== undefined && info.spawnError === undefined) {
        const tail = owned.process.tail;
        outcome.log = {
          source: "controller",
          reason,
          exit_code: info.code,
          signal: info.signal,
          text: tail.text(),
          dropped_bytes: tail.droppedBytes,
        };
      }
      this.finished.set(rolloutId, outcome);
      // Killed by this controller's own shutdown (Ctrl-C of train, demo, eval): expected, not a warning.
      this.log[state === "succeeded" || cause === "shutdown" ? "info" : "warn"](
        { rolloutId, attemptId: record.attempt_id, reason },
        "rollout process ended",
      );
    }
    this.wake();
  }

  /** Reports every pending outcome; one that fails on a transport error stays for the next pass. */
  private async flushFinished(): Promise<void> {
    let changed = false;
    for (const outcome of [...this.finished.values()]) {
      try {
        const result = await reportOutcome(this.client, outcome);
        if (result === "superseded")
          this.log.warn({ ...outcome, log: undefined }, "rollout changed elsewhere; outcome dropped");
      } catch (err) {
        this.log.warn({ err, rolloutId: outcome.rolloutId }, "could not report rollout outcome; will retry");
        continue;
      }
      this.finished.delete(outcome.rolloutId);
      this.removeAttemptFiles(outcome.rolloutId, outcome.attemptId);
      changed = this.records.delete(outcome.rolloutId) || changed;
    }
    if (changed) this.saveState();
  }

  /** Removes an attempt's exit file and start marker once its outcome is reported or dropped. */
  private removeAttemptFiles(rolloutId: string, attemptId: string): void {
    const exitFile = this.exitFileOf(rolloutId, attemptId);
    rmSync(exitFile, { force: true });
    rmSync(`${exitFile}.pid`, { force: true });
  }

  private saveState(): void {
    this.stateFile.save(this.records);
  }
}

/** setTimeout fires at once for delays past 2^31 - 1 ms (~24.8 days); clamp so a huge timeout means "very late". */
function clampTimerMs(ms: number): number {
  return Math.min(2 ** 31 - 1, Math.max(0, ms));
}
