/**
 * @module `history.jsonl` of a prompt search: one JSON line per record, appended as it happens, so a stopped search
 * keeps everything it learnt.
 */
import { appendFileSync } from "node:fs";
import { dirname } from "node:path";
import { makeDirs } from "../fs/make-dirs.js";
import type { Trace } from "./optimiser-messages.js";

/** Seconds spent in each phase of a round. */
export interface RoundTimings {
  minibatch_s: number;
  optimiser_s: number;
  scoring_s: number;
  round_s: number;
}

/** One line of history.jsonl. */
export type HistoryRecord =
  | {
      type: "prompt";
      round: number;
      id: string;
      parent_id: string | null;
      version: number;
      prompt: string;
      val_score: number;
      val_rewards: number[];
      failed_rollouts: number;
    }
  | {
      type: "critique";
      round: number;
      parent_id: string;
      minibatch_score: number;
      traces: Trace[];
      critique: string;
      attempts: number;
    }
  | { type: "proposals"; round: number; parent_id: string; prompts: string[]; attempts: number }
  | {
      type: "bad_output";
      round: number;
      parent_id: string;
      stage: "critique" | "edit";
      problems: string[];
      attempts: number;
    }
  | {
      type: "round";
      round: number;
      candidates: number;
      /** True when the optimiser gave no usable proposal for any beam prompt: nothing was scored. */
      bad: boolean;
      beam: { id: string; score: number }[];
      best_id: string;
      best_score: number;
      gain: number;
      timings: RoundTimings;
    }
  | {
      type: "result";
      best_id: string;
      best_score: number;
      initial_score: number;
      rounds: number;
      /** Rounds in which the optimiser gave no usable prompt. */
      bad_rounds: number;
      stop_reason: "rounds" | "patience";
      /** null when the starting prompt stayed best (no new version published). */
      published_version: number | null;
    };

/** Appends records to a history.jsonl file. */
export class History {
  /** The file. */
  readonly path: string;
  /** Every record appended, in order. */
  readonly records: HistoryRecord[] = [];

  /** @param path - the file (its folder is created) */
  constructor(path: string) {
    this.path = path;
    makeDirs(dirname(path));
  }

  /** Appends one record as a JSON line. */
  append(record: HistoryRecord): void {
    this.records.push(record);
    appendFileSync(this.path, `${JSON.stringify(record)}\n`);
  }
}
