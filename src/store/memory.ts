/** @module In-memory `Store`: same contract as SQLite, nothing survives the process. For tests and throw-away runs. */
import {
  dataIdOf,
  type Event,
  type EventCreate,
  FIRST_ATTEMPT_ID,
  type Model,
  mergeModel,
  type ResourceVersion,
  type Rollout,
  type RolloutCreate,
  RolloutNotFound,
  type RolloutPatch,
  type RolloutState,
  RolloutStateSchema,
  type TerminalPage,
} from "../protocol/index.js";
import { applyPatch, buildRollout, checkEventWrite, nowSeconds } from "./rollout-rules.js";
import type { EventQuery, RolloutQuery, Store } from "./store.js";

interface RolloutRecord {
  rollout: Rollout;
  /** Every attempt id this rollout has had, current included. */
  attempts: Set<string>;
  events: Event[];
  eventsById: Map<string, Event>;
}

/** Deep copy through JSON: callers cannot mutate stored state, and values are exactly what SQLite would keep. */
function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Orders strings by UTF-16 code units, as SQLite's default BINARY collation does for ASCII text. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A `Store` in Maps; each method runs synchronously inside its promise, so calls never interleave half-way. */
export class MemoryStore implements Store {
  private readonly rollouts = new Map<string, RolloutRecord>();
  /** Terminal cursor: position (1-based, never reused) → rollout id. */
  private readonly terminal = new Map<number, string>();
  private terminalSeq = 0;
  private readonly models = new Map<string, Model>();
  /** Resource name → its versions, oldest first (version k at index k-1). */
  private readonly resources = new Map<string, ResourceVersion[]>();
  private eventCount = 0;
  private closed = false;
  /** Bumped by every write that may change a rollout or a model endpoint (see {@link Store.revision}). */
  private writes = 0;

  private check(): void {
    if (this.closed) throw new Error("store is closed");
  }

  /** Checks the store is open and bumps {@link revision} before a rollout or model write. */
  private checkWrite(): void {
    this.check();
    this.writes++;
  }

  revision(): number {
    return this.writes;
  }

  async createRollouts(creates: readonly RolloutCreate[]): Promise<Rollout[]> {
    this.checkWrite();
    const now = nowSeconds();
    const fresh = new Map<string, RolloutRecord>();
    const out = creates.map((create) => {
      const existing = create.rollout_id
        ? (this.rollouts.get(create.rollout_id) ?? fresh.get(create.rollout_id))
        : undefined;
      if (existing) return clone(existing.rollout);
      const rollout = buildRollout(clone(create), now);
      fresh.set(rollout.rollout_id, {
        rollout,
        attempts: new Set([FIRST_ATTEMPT_ID]),
        events: [],
        eventsById: new Map(),
      });
      return clone(rollout);
    });
    for (const [id, record] of fresh) this.rollouts.set(id, record);
    return out;
  }

  async getRollout(rolloutId: string): Promise<Rollout | undefined> {
    this.check();
    const record = this.rollouts.get(rolloutId);
    return record ? clone(record.rollout) : undefined;
  }

  async listRollouts(query: RolloutQuery = {}): Promise<Rollout[]> {
    this.check();
    const { states, isTrain, limit = 500, offset = 0 } = query;
    const out: Rollout[] = [];
    let skipped = 0;
    for (const { rollout } of this.rollouts.values()) {
      if (states && states.length > 0 && !states.includes(rollout.status.state)) continue;
      if (isTrain !== undefined && rollout.is_train !== isTrain) continue;
      if (skipped < offset) {
        skipped++;
        continue;
      }
      if (out.length >= limit) break;
      out.push(clone(rollout));
    }
    return out;
  }

  async patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout> {
    this.checkWrite();
    const record = this.rollouts.get(rolloutId);
    if (!record) throw new RolloutNotFound(rolloutId);
    const outcome = applyPatch(record.rollout, patch, record.attempts, nowSeconds());
    record.rollout = outcome.rollout;
    for (const attemptId of outcome.newAttemptIds) record.attempts.add(attemptId);
    if (outcome.becameTerminal) this.terminal.set(++this.terminalSeq, rolloutId);
    return clone(record.rollout);
  }

  async deleteRollout(rolloutId: string): Promise<boolean> {
    this.checkWrite();
    const record = this.rollouts.get(rolloutId);
    if (!record) return false;
    this.eventCount -= record.events.length;
    this.rollouts.delete(rolloutId);
    for (const [seq, id] of this.terminal) if (id === rolloutId) this.terminal.delete(seq);
    return true;
  }

  async listTerminal(after: number, limit: number): Promise<TerminalPage> {
    this.check();
    const items: TerminalPage["items"] = [];
    let nextAfter = after;
    for (const [seq, id] of this.terminal) {
      if (seq <= after) continue;
      if (items.length >= limit) break;
      const { rollout } = this.rollouts.get(id)!;
      items.push({
        rollout_id: id,
        state: rollout.status.state,
        data_id: dataIdOf(rollout.input),
        is_train: rollout.is_train,
      });
      nextAfter = seq;
    }
    return { items, next_after: nextAfter, total_terminal: this.terminal.size };
  }

  async appendEvents(rolloutId: string, attemptId: string, events: readonly EventCreate[]): Promise<Event[]> {
    this.check();
    const record = this.rollouts.get(rolloutId);
    if (!record) throw new RolloutNotFound(rolloutId);
    const { late } = checkEventWrite(record.rollout, attemptId, (id) => record.attempts.has(id));
    const timestamp = nowSeconds();
    const added: Event[] = [];
    const addedById = new Map<string, Event>();
    const out = events.map((create) => {
      const duplicate = create.event_id
        ? (record.eventsById.get(create.event_id) ?? addedById.get(create.event_id))
        : undefined;
      if (duplicate) return clone(duplicate);
      const event: Event = {
        event_type: create.event_type,
        rollout_id: rolloutId,
        attempt_id: attemptId,
        timestamp,
        data: clone(create.data),
        sequence: record.events.length + added.length + 1,
        event_id: create.event_id ?? null,
        ...(late ? { late: true as const } : {}),
      };
      added.push(event);
      if (event.event_id) addedById.set(event.event_id, event);
      return clone(event);
    });
    record.events.push(...added);
    for (const [id, event] of addedById) record.eventsById.set(id, event);
    this.eventCount += added.length;
    return out;
  }

  async listEvents(rolloutId: string, query: EventQuery = {}): Promise<Event[]> {
    this.check();
    const record = this.rollouts.get(rolloutId);
    if (!record) return [];
    return record.events
      .filter(
        (e) =>
          (query.attemptId === undefined || e.attempt_id === query.attemptId) &&
          (query.eventType === undefined || e.event_type === query.eventType),
      )
      .map(clone);
  }

  async listAttempts(rolloutId: string): Promise<string[]> {
    this.check();
    const record = this.rollouts.get(rolloutId);
    if (!record) return [];
    return [...new Set(record.events.map((e) => e.attempt_id))];
  }

  async addResourceVersion(name: string, value: unknown): Promise<ResourceVersion> {
    this.checkWrite();
    const versions = this.resources.get(name) ?? [];
    const stored = { name, version: versions.length + 1, value: structuredClone(value), created_at: nowSeconds() };
    versions.push(stored);
    this.resources.set(name, versions);
    return structuredClone(stored);
  }

  async getResource(name: string, version?: number): Promise<ResourceVersion | undefined> {
    this.check();
    const versions = this.resources.get(name) ?? [];
    const found = version === undefined ? versions.at(-1) : versions[version - 1];
    return found === undefined ? undefined : structuredClone(found);
  }

  async listLatestResources(): Promise<ResourceVersion[]> {
    this.check();
    return [...this.resources.keys()]
      .sort(compare)
      .map((name) => structuredClone(this.resources.get(name)?.at(-1) as ResourceVersion));
  }

  async upsertModels(models: readonly Model[]): Promise<Model[]> {
    this.checkWrite();
    return models.map((model) => {
      const key = `${model.model}\u0000${model.endpoint}`;
      const merged = mergeModel(this.models.get(key), model);
      this.models.set(key, merged);
      return clone(merged);
    });
  }

  async listModels(model?: string): Promise<Model[]> {
    this.check();
    return [...this.models.values()]
      .filter((m) => model === undefined || m.model === model)
      .sort((a, b) => compare(a.model, b.model) || compare(a.endpoint, b.endpoint))
      .map(clone);
  }

  async deleteModels(model?: string): Promise<number> {
    this.checkWrite();
    let removed = 0;
    for (const [key, m] of this.models) {
      if (model === undefined || m.model === model) {
        this.models.delete(key);
        removed++;
      }
    }
    return removed;
  }

  async countByState(): Promise<Record<RolloutState, number>> {
    this.check();
    const counts = Object.fromEntries(RolloutStateSchema.options.map((s) => [s, 0])) as Record<RolloutState, number>;
    for (const { rollout } of this.rollouts.values()) counts[rollout.status.state]++;
    return counts;
  }

  async countEvents(): Promise<number> {
    this.check();
    return this.eventCount;
  }

  async ping(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
