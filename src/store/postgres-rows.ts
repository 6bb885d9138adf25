/** @module PostgreSQL rows and their wire objects; JSON goes in as text (`$n::json`), else arrays become PG arrays. */
import {
  dataIdOf,
  type Event,
  type Rollout,
  type RolloutState,
  withConfigDefaults,
  withMetadataDefaults,
} from "../protocol/index.js";

/** Columns every rollout read selects, in {@link PgRolloutRow} order. */
export const PG_ROLLOUT_COLUMNS =
  "rollout_id, input, is_train, config, metadata, state, k8s_job_name, last_attempt_id, error_message, version, " +
  "created_at, updated_at";

/** One row of `rollouts` as read by {@link PG_ROLLOUT_COLUMNS}. */
export interface PgRolloutRow {
  rollout_id: string;
  input: unknown;
  is_train: boolean;
  config: Rollout["config"];
  metadata: Partial<Rollout["metadata"]>;
  state: RolloutState;
  k8s_job_name: string | null;
  last_attempt_id: string | null;
  error_message: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}

/** Columns every event read selects: the wire event's fields. */
export const PG_EVENT_COLUMNS = "event_type, rollout_id, attempt_id, timestamp, data, sequence, event_id, late";

/** One row of `events` as read by {@link PG_EVENT_COLUMNS}. */
export type PgEventRow = Omit<Event, "late"> & { late: boolean };

/** @returns the wire rollout of a stored row */
export function rolloutFromPgRow(row: PgRolloutRow): Rollout {
  return {
    rollout_id: row.rollout_id,
    input: row.input,
    is_train: row.is_train,
    config: withConfigDefaults(row.config),
    metadata: withMetadataDefaults(row.metadata),
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

/** The `INSERT INTO rollouts` of a new rollout: 13 parameters, JSON as text. */
export const PG_INSERT_ROLLOUT = `INSERT INTO rollouts (rollout_id, input, data_id, is_train, config, metadata, state,
  k8s_job_name, last_attempt_id, error_message, version, created_at, updated_at)
  VALUES ($1, $2::json, $3, $4, $5::json, $6::json, $7, $8, $9, $10, $11, $12, $13)
  ON CONFLICT (rollout_id) DO NOTHING`;

/** @returns the parameters of {@link PG_INSERT_ROLLOUT} */
export function rolloutInsertParams(rollout: Rollout): unknown[] {
  const { status } = rollout;
  return [
    rollout.rollout_id,
    JSON.stringify(rollout.input),
    dataIdOf(rollout.input),
    rollout.is_train,
    JSON.stringify(rollout.config),
    JSON.stringify(rollout.metadata),
    status.state,
    status.k8s_job_name,
    status.last_attempt_id,
    status.error_message,
    status.version,
    status.created_at,
    status.updated_at,
  ];
}

/** The `UPDATE rollouts` of a patch: the mutable status columns, keyed by `$1` = rollout_id. */
export const PG_UPDATE_STATUS = `UPDATE rollouts SET state = $2, k8s_job_name = $3, last_attempt_id = $4,
  error_message = $5, version = $6, updated_at = $7 WHERE rollout_id = $1`;

/** @returns the parameters of {@link PG_UPDATE_STATUS} */
export function statusUpdateParams(rollout: Rollout): unknown[] {
  const { status } = rollout;
  return [
    rollout.rollout_id,
    status.state,
    status.k8s_job_name,
    status.last_attempt_id,
    status.error_message,
    status.version,
    status.updated_at,
  ];
}

/** @returns the wire event of a stored row (node-postgres already parsed `data`); `late` only when true */
export function eventFromPgRow(row: PgEventRow): Event {
  const { late, ...event } = row;
  return late ? { ...event, late: true } : event;
}
