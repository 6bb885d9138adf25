/** @module SQLite rows and their wire objects: JSON as TEXT, booleans 0/1, times REAL epoch seconds. */
import {
  dataIdOf,
  type Event,
  type Rollout,
  type RolloutState,
  withConfigDefaults,
  withMetadataDefaults,
} from "../protocol/index.js";

/** Columns every rollout read selects, in {@link RolloutSqlRow} order. */
export const ROLLOUT_COLUMNS =
  "rollout_id, input, is_train, config, metadata, state, k8s_job_name, last_attempt_id, error_message, version, " +
  "created_at, updated_at";

/** One row of `rollouts` as read by {@link ROLLOUT_COLUMNS}. */
export interface RolloutSqlRow {
  rollout_id: string;
  input: string;
  is_train: number;
  config: string;
  metadata: string;
  state: RolloutState;
  k8s_job_name: string | null;
  last_attempt_id: string | null;
  error_message: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}

/** Columns every event read selects, in {@link EventRow} order. */
export const EVENT_COLUMNS = "event_type, rollout_id, attempt_id, timestamp, data, sequence, event_id, late";

/** One row of `events` as read by {@link EVENT_COLUMNS}. */
export interface EventRow {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  timestamp: number;
  data: string;
  sequence: number;
  event_id: string | null;
  /** 1 when the event arrived after the rollout finished. */
  late: number;
}

/** @returns the wire rollout of a stored row (a fresh object) */
export function rolloutFromRow(row: RolloutSqlRow): Rollout {
  return {
    rollout_id: row.rollout_id,
    input: JSON.parse(row.input),
    is_train: row.is_train === 1,
    config: withConfigDefaults(JSON.parse(row.config) as Rollout["config"]),
    metadata: withMetadataDefaults(JSON.parse(row.metadata)),
    status: {
      state: row.state,
      k8s_job_name: row.k8s_job_name,
      last_attempt_id: row.last_attempt_id,
      error_message: row.error_message,
      version: row.version,
      created_at: row.created_at,
      updated_at: row.updated_at,
    },
  };
}

/** @returns named parameters of an `INSERT INTO rollouts` (every column but `seq`) */
export function rolloutToParams(rollout: Rollout): Record<string, unknown> {
  return {
    rollout_id: rollout.rollout_id,
    // `input` may be any JSON value; undefined never reaches here (the create schema requires it).
    input: JSON.stringify(rollout.input),
    data_id: dataIdOf(rollout.input),
    is_train: rollout.is_train ? 1 : 0,
    config: JSON.stringify(rollout.config),
    metadata: JSON.stringify(rollout.metadata),
    ...rolloutStatusToParams(rollout),
    created_at: rollout.status.created_at,
  };
}

/** @returns named parameters of the mutable status columns (an `UPDATE rollouts SET …` after a patch) */
export function rolloutStatusToParams(rollout: Rollout): Record<string, unknown> {
  const { status } = rollout;
  return {
    rollout_id: rollout.rollout_id,
    state: status.state,
    k8s_job_name: status.k8s_job_name,
    last_attempt_id: status.last_attempt_id,
    error_message: status.error_message,
    version: status.version,
    updated_at: status.updated_at,
  };
}

/** @returns the wire event of a stored row (a fresh object) */
export function eventFromRow(row: EventRow): Event {
  return {
    event_type: row.event_type,
    rollout_id: row.rollout_id,
    attempt_id: row.attempt_id,
    timestamp: row.timestamp,
    data: JSON.parse(row.data),
    sequence: row.sequence,
    event_id: row.event_id,
    ...(row.late === 1 ? { late: true as const } : {}),
  };
}
