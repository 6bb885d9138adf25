/** @module Shapes of the gateway answers the dashboard reads (a subset of their fields). */

/** A run as `GET /api/runs` lists it. */
export interface RunSummary {
  name: string;
  config: Record<string, unknown>;
  total_steps: number | null;
  steps: number;
  last_step: number | null;
  created_at: number;
  updated_at: number;
}

/** One step's metrics (slash-namespaced keys, `step` always present). */
export type RunStep = Record<string, number | null>;

/** A run with its metrics (`GET /api/runs/{name}`). */
export interface RunRecord extends RunSummary {
  metrics: RunStep[];
}

/** One row of `GET /api/dashboard/rollouts`. */
export interface RolloutRow {
  rollout_id: string;
  state: string;
  is_train: boolean;
  data_id: string;
  step: number | null;
  agent: string;
  reward: number | null;
  attempt_id: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
}

/** A page of the rollout table. */
export interface RolloutPage {
  items: RolloutRow[];
  total: number;
  limit: number;
  offset: number;
}

/** A stored event (`GET /api/rollouts/{id}/events`). */
export interface WireEvent {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  timestamp: number;
  data: Record<string, unknown>;
  sequence: number;
  event_id: string | null;
}

/** A stored rollout (`GET /api/rollouts/{id}`), the fields shown. */
export interface WireRollout {
  rollout_id: string;
  input: unknown;
  is_train: boolean;
  metadata: Record<string, unknown>;
  status: {
    state: string;
    last_attempt_id: string | null;
    error_message: string | null;
    created_at: number;
    updated_at: number;
  };
}
