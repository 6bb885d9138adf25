/**
 * @module The dashboard's rollout table: one small summary row per rollout (state, split, step, data id, agent,
 * reward), kept in memory and brought up to date from the store before each query, so filtering and paging 100k
 * rollouts never loads full rollouts or their events per request.
 *
 * A sync pass: (1) nothing to do while `store.revision()` is unchanged; (2) read rollouts created since the last pass
 * (creation order, by offset, after checking that the store's row at the index's last offset is still the index's last
 * row); (3) re-read the rollouts the index still holds as live (queuing/running); (4) read the
 * last `reward` event of each rollout that became terminal (a terminal rollout takes no more events, so once is
 * enough); (5) when the store holds another number of rollouts than the index, or the last-row check of (2) failed
 * (a delete), rebuild from scratch.
 */
import { dataIdOf, type Rollout, type RolloutState } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";

/** One rollout as the dashboard's table shows it. Times are epoch seconds. */
export interface RolloutTableRow {
  rollout_id: string;
  state: RolloutState;
  is_train: boolean;
  data_id: string;
  /** `metadata.batch_idx`: the training step that launched it; null when absent. */
  step: number | null;
  /** `metadata.agent`, else `config.local.agent_class`'s export, else the command, paths cut to their base name; "" when none. */
  agent: string;
  /** Value of the last `reward` event once the rollout is terminal; null before, or when it posted none. */
  reward: number | null;
  attempt_id: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
}

/** Filter and page of {@link RolloutIndex.query}. Every field is optional; absent means no filter. */
export interface RolloutFilter {
  states?: readonly RolloutState[];
  isTrain?: boolean;
  /** Rollouts of this training run: their ids start with `${run}-` (the trainer names them so). */
  run?: string;
  step?: number;
  /** Exact `data_id`. */
  dataId?: string;
  rewardMin?: number;
  rewardMax?: number;
  /** Substring of the row's `agent`. */
  agent?: string;
  /** Substring of the rollout id. */
  idContains?: string;
  limit: number;
  offset: number;
}

/** A page of rows, newest first, and how many rows match in all. */
export interface RolloutPage {
  items: RolloutTableRow[];
  total: number;
}

/** Rollouts read per store call while syncing. */
const SYNC_PAGE = 5000;
const LIVE_STATES: readonly RolloutState[] = ["queuing", "running"];

/**
 * The agent a rollout runs, as the table names it: `metadata.agent`; else the export of `agent_class`
 * (`/home/me/proj/agent.ts:calculatorRollout` → `calculatorRollout`; a `default` export → the module's base name);
 * else the command with each path cut to its last segment (`python3 /home/me/proj/agent.py` → `python3 agent.py`).
 */
function agentOf(rollout: Rollout): string {
  const fromMetadata = rollout.metadata.agent;
  if (typeof fromMetadata === "string") return fromMetadata;
  const local = rollout.config.local;
  if (local?.agent_class !== undefined) return agentClassName(local.agent_class);
  return local?.command?.map(lastPathSegment).join(" ") ?? "";
}

/** `module.js:Export` → `Export`; `module.js` or `module.js:default` → `module`. */
function agentClassName(agentClass: string): string {
  const colon = agentClass.lastIndexOf(":");
  const exportName = colon > 0 ? agentClass.slice(colon + 1) : "";
  if (exportName !== "" && exportName !== "default" && !exportName.includes("/")) return exportName;
  const module = colon > 0 && !exportName.includes("/") ? agentClass.slice(0, colon) : agentClass;
  return lastPathSegment(module).replace(/\.[cm]?[jt]sx?$/, "");
}

/** The last segment of a path (`a/b/agent.py` → `agent.py`); an argument that is not a path is kept. */
function lastPathSegment(arg: string): string {
  if (arg.startsWith("-") || !arg.includes("/")) return arg;
  const segments = arg.split("/").filter((segment) => segment !== "");
  return segments.at(-1) ?? arg;
}

/** A rollout's summary row (reward not yet read). */
function rowOf(rollout: Rollout): RolloutTableRow {
  const step = rollout.metadata.batch_idx;
  return {
    rollout_id: rollout.rollout_id,
    state: rollout.status.state,
    is_train: rollout.is_train,
    data_id: dataIdOf(rollout.input),
    step: typeof step === "number" ? step : null,
    agent: agentOf(rollout),
    reward: null,
    attempt_id: rollout.status.last_attempt_id,
    error_message: rollout.status.error_message,
    created_at: rollout.status.created_at,
    updated_at: rollout.status.updated_at,
  };
}

/** True when the row passes every filter field that is set. */
function matches(row: RolloutTableRow, filter: RolloutFilter): boolean {
  if (filter.states && filter.states.length > 0 && !filter.states.includes(row.state)) return false;
  if (filter.isTrain !== undefined && row.is_train !== filter.isTrain) return false;
  if (filter.run !== undefined && !row.rollout_id.startsWith(`${filter.run}-`)) return false;
  if (filter.step !== undefined && row.step !== filter.step) return false;
  if (filter.dataId !== undefined && row.data_id !== filter.dataId) return false;
  if (filter.rewardMin !== undefined && (row.reward === null || row.reward < filter.rewardMin)) return false;
  if (filter.rewardMax !== undefined && (row.reward === null || row.reward > filter.rewardMax)) return false;
  if (filter.agent !== undefined && !row.agent.includes(filter.agent)) return false;
  if (filter.idContains !== undefined && !row.rollout_id.includes(filter.idContains)) return false;
  return true;
}

/** Summary rows of every rollout in a store, synced on demand. */
export class RolloutIndex {
  private readonly store: Store;
  /** Rows in creation order. */
  private rows: RolloutTableRow[] = [];
  private readonly byId = new Map<string, RolloutTableRow>();
  /** Ids of rows last seen queuing or running. */
  private readonly live = new Set<string>();
  private syncedRevision: number | undefined;
  private running: Promise<void> | undefined;

  /** @param store - the gateway's store (read only) */
  constructor(store: Store) {
    this.store = store;
  }

  /** Number of rollouts the index holds. */
  get size(): number {
    return this.rows.length;
  }

  /** Brings the index up to date with the store; concurrent callers share one pass. */
  sync(): Promise<void> {
    this.running ??= this.syncOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Filters and pages the rows (call {@link sync} first).
   * @param filter - filters, `limit` and `offset`
   * @returns matching rows newest first, sliced to the page, and the number matching
   */
  query(filter: RolloutFilter): RolloutPage {
    const items: RolloutTableRow[] = [];
    let total = 0;
    for (let i = this.rows.length - 1; i >= 0; i -= 1) {
      const row = this.rows[i] as RolloutTableRow;
      if (!matches(row, filter)) continue;
      if (total >= filter.offset && items.length < filter.limit) items.push(row);
      total += 1;
    }
    return { items, total };
  }

  private async syncOnce(): Promise<void> {
    const revision = this.store.revision();
    if (revision === this.syncedRevision) return;
    if (!(await this.lastRowStillLast())) this.reset();
    const becameTerminal = await this.readNew();
    await this.refreshLive(becameTerminal);
    await this.readRewards(becameTerminal);
    const counts = await this.store.countByState();
    const stored = Object.values(counts).reduce((a, b) => a + b, 0);
    if (stored !== this.rows.length) {
      this.reset();
      return this.syncOnce();
    }
    this.syncedRevision = revision;
  }

  /** Step 2's check: the store's rollout at the index's last offset is the index's last row (no delete before it). */
  private async lastRowStillLast(): Promise<boolean> {
    const last = this.rows.at(-1);
    if (!last) return true;
    const [atOffset] = await this.store.listRollouts({ offset: this.rows.length - 1, limit: 1 });
    return atOffset?.rollout_id === last.rollout_id;
  }

  /** Step 2: rollouts created since the last pass. @returns ids of new rows already terminal */
  private async readNew(): Promise<string[]> {
    const terminal: string[] = [];
    for (;;) {
      const page = await this.store.listRollouts({ offset: this.rows.length, limit: SYNC_PAGE });
      for (const rollout of page) {
        const row = rowOf(rollout);
        this.rows.push(row);
        this.byId.set(row.rollout_id, row);
        if (LIVE_STATES.includes(row.state)) this.live.add(row.rollout_id);
        else terminal.push(row.rollout_id);
      }
      if (page.length < SYNC_PAGE) return terminal;
    }
  }

  /** Step 3: re-reads rows held as live; adds those now terminal to `becameTerminal`. */
  private async refreshLive(becameTerminal: string[]): Promise<void> {
    if (this.live.size === 0) return;
    const stillLive = new Set<string>();
    const liveNow = await this.store.listRollouts({ states: LIVE_STATES, limit: Number.MAX_SAFE_INTEGER });
    for (const rollout of liveNow) {
      stillLive.add(rollout.rollout_id);
      this.replace(rollout);
    }
    for (const id of [...this.live]) {
      if (stillLive.has(id)) continue;
      this.live.delete(id);
      const rollout = await this.store.getRollout(id);
      if (!rollout) continue; // deleted: the count check rebuilds
      this.replace(rollout);
      becameTerminal.push(id);
    }
  }

  /** Step 4: the last reward event of each newly terminal rollout. */
  private async readRewards(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const row = this.byId.get(id);
      if (!row) continue;
      const rewards = await this.store.listEvents(id, { eventType: "reward" });
      const value = rewards.at(-1)?.data.value;
      row.reward = typeof value === "number" ? value : null;
    }
  }

  /** Updates a row in place from a fresh read of its rollout. */
  private replace(rollout: Rollout): void {
    const row = this.byId.get(rollout.rollout_id);
    if (!row) return;
    Object.assign(row, { ...rowOf(rollout), reward: row.reward });
  }

  /** Step 5: forget everything, so the next pass reads the store from the start. */
  private reset(): void {
    this.rows = [];
    this.byId.clear();
    this.live.clear();
  }
}
