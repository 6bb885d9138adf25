/**
 * @module A Weights & Biases run written offline, in W&B's own layout, for `wandb sync` to upload later:
 * `<dir>/wandb/offline-run-YYYYMMDD_HHMMSS-<id>/run-<id>.wandb` (the transaction log: `wandb_internal.Record`
 * protobufs in W&B's LevelDB-log framing, see wandb-log.ts) and `files/` (tables as `media/table/*.table.json`).
 * Records: a header, the run (id, entity, project, display name, config, start time), one history record per step
 * (with `_step`, `_runtime`, `_timestamp`; what is logged for a step is merged and written when a later step is
 * logged or the run ends, as W&B's client does), files records for tables, summary records, and the exit record.
 * A resumed run gets a new folder whose run record carries the same run id and `resumed` set, as
 * `wandb.init(id=..., resume="allow")` writes offline, so `wandb sync` uploads it into the same run.
 * @see https://github.com/wandb/wandb (wandb/proto/wandb_internal.proto: field numbers of the messages below)
 */
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import protobuf from "protobufjs";
import { makeDirs } from "../fs/make-dirs.js";
import type { TrackerIdentities, WandbIdentity } from "./run-identity.js";
import { StepRow } from "./step-row.js";
import type { TrackedTable, Tracker } from "./tracker.js";
import { frameRecord, WANDB_LOG_HEADER } from "./wandb-log.js";

/** The subset of wandb_internal.proto (and google/protobuf/timestamp.proto) written here; field numbers as W&B's. */
const SCHEMA = `
syntax = "proto3";
message Record {
  int64 num = 1;
  oneof record_type {
    HistoryRecord history = 2;
    SummaryRecord summary = 3;
    FilesRecord files = 6;
    RunRecord run = 17;
    RunExitRecord exit = 18;
    HeaderRecord header = 21;
  }
}
message Item { string key = 1; repeated string nested_key = 2; string value_json = 16; }
message ConfigRecord { repeated Item update = 1; }
message HistoryStep { int64 num = 1; }
message HistoryRecord { repeated Item item = 1; HistoryStep step = 2; }
message SummaryRecord { repeated Item update = 1; }
message FilesItem { string path = 1; int32 policy = 2; int32 type = 3; }
message FilesRecord { repeated FilesItem files = 1; }
message Timestamp { int64 seconds = 1; int32 nanos = 2; }
message RunRecord {
  string run_id = 1;
  string entity = 2;
  string project = 3;
  ConfigRecord config = 4;
  string display_name = 8;
  string host = 13;
  Timestamp start_time = 17;
  bool resumed = 18;
}
message RunExitRecord { int32 exit_code = 1; int32 runtime = 2; }
message VersionInfo { string producer = 1; string min_consumer = 2; }
message HeaderRecord { VersionInfo version_info = 1; }
`;
/** W&B's `Record` message (the subset above). */
export const RECORD = protobuf.parse(SCHEMA, { keepCase: true }).root.lookupType("Record");
/** `FilesItem.PolicyType.NOW` and `FileType.MEDIA` in wandb_internal.proto. */
const POLICY_NOW = 0;
const FILE_TYPE_MEDIA = 2;

/** `YYYYMMDD_HHMMSS` in local time, as W&B names run folders. */
function folderTime(date: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const day = `${date.getFullYear()}${two(date.getMonth() + 1)}${two(date.getDate())}`;
  return `${day}_${two(date.getHours())}${two(date.getMinutes())}${two(date.getSeconds())}`;
}

/** Key/value items as W&B stores config, history and summary entries: the value as JSON text. */
function items(values: Record<string, unknown>): { key: string; value_json: string }[] {
  return Object.entries(values).map(([key, value]) => ({ key, value_json: JSON.stringify(value) }));
}

/** One W&B run written to disk for `wandb sync`. */
export class WandbOfflineTracker implements Tracker {
  /** The tool, as warnings name it. */
  readonly tool = "wandb";
  /** The run id: 8 lowercase hex characters (W&B's are lowercase letters and digits), or the resumed run's. */
  readonly runId: string;
  /** `<dir>/wandb/offline-run-YYYYMMDD_HHMMSS-<id>`: what `wandb sync` is given. */
  readonly runDir: string;
  /** The transaction log, `<runDir>/run-<id>.wandb`. */
  readonly logPath: string;
  private offset = 0;
  private num = 0;
  private readonly startedMs: number;
  private readonly lastValues: Record<string, unknown> = {};
  private readonly row = new StepRow();

  /**
   * @param dir - the folder that gets `wandb/` (W&B's `WANDB_DIR`; default: the working directory)
   * @param project - the project `wandb sync` uploads to (empty: the key's default)
   * @param entity - the entity (empty: the key's default)
   * @param displayName - the run's name as shown (the arclight run name)
   * @param nowMs - the clock of the folder name, `_timestamp` and `_runtime`
   * @param resume - the run to continue (same project): its id, and `resumed` in the run record; null: a new run
   */
  constructor(
    dir: string,
    private readonly project: string,
    private readonly entity: string,
    private readonly displayName: string,
    private readonly nowMs: () => number = Date.now,
    private readonly resume: WandbIdentity | null = null,
  ) {
    this.runId = resume?.run_id ?? randomBytes(4).toString("hex");
    this.startedMs = nowMs();
    this.runDir = join(dir, "wandb", `offline-run-${folderTime(new Date(this.startedMs))}-${this.runId}`);
    this.logPath = join(this.runDir, `run-${this.runId}.wandb`);
  }

  /** @returns the run, for `--resume` */
  identity(): TrackerIdentities {
    return { wandb: { run_id: this.runId, entity: this.entity, project: this.project } };
  }

  /** Creates the run folder and the log (header record, run record with the config). */
  async start(config: Record<string, unknown>): Promise<void> {
    makeDirs(join(this.runDir, "files"));
    writeFileSync(this.logPath, WANDB_LOG_HEADER, { flag: "wx" });
    this.offset = WANDB_LOG_HEADER.length;
    this.append({ header: { version_info: { producer: "arclight" } } });
    const seconds = Math.floor(this.startedMs / 1000);
    this.append({
      run: {
        run_id: this.runId,
        entity: this.entity,
        project: this.project,
        config: { update: items(config) },
        display_name: this.displayName,
        host: hostname(),
        start_time: { seconds, nanos: (this.startedMs - seconds * 1000) * 1e6 },
        resumed: this.resume !== null,
      },
    });
  }

  async logMetrics(step: number, metrics: Record<string, number>): Promise<void> {
    this.history(step, metrics);
  }

  /**
   * Writes the table as `files/media/table/<key>_<step>_<sha256 prefix>.table.json` (`{columns, data}`, as
   * `wandb.Table` saves one), a files record that uploads it, and a history row pointing at it (`table-file`).
   */
  async logTable(key: string, step: number, table: TrackedTable): Promise<void> {
    const body = JSON.stringify({ columns: table.columns, data: table.rows });
    const sha256 = createHash("sha256").update(body).digest("hex");
    const path = `media/table/${key.replaceAll("/", "_")}_${step}_${sha256.slice(0, 20)}.table.json`;
    makeDirs(join(this.runDir, "files", "media", "table"));
    writeFileSync(join(this.runDir, "files", path), body);
    this.append({ files: { files: [{ path, policy: POLICY_NOW, type: FILE_TYPE_MEDIA }] } });
    const ref = {
      _type: "table-file",
      path,
      sha256,
      size: Buffer.byteLength(body),
      ncols: table.columns.length,
      nrows: table.rows.length,
    };
    this.history(step, { [key]: ref });
  }

  async logSummary(key: string, value: string): Promise<void> {
    this.lastValues[key] = value;
    this.append({ summary: { update: items({ [key]: value }) } });
  }

  /** The summary (each key's last value) and the exit record: code 0 finished, 1 failed; runtime in seconds. */
  async finish(status: "finished" | "failed"): Promise<void> {
    if (this.offset === 0) return;
    this.writeRow(this.row.take());
    this.append({ summary: { update: items(this.lastValues) } });
    const runtime = Math.round((this.nowMs() - this.startedMs) / 1000);
    this.append({ exit: { exit_code: status === "finished" ? 0 : 1, runtime } });
  }

  /** Adds to the step's history row, with W&B's `_step`, `_runtime` (s) and `_timestamp` (epoch s) of the last add. */
  private history(step: number, values: Record<string, unknown>): void {
    const nowMs = this.nowMs();
    const row = { ...values, _step: step, _runtime: (nowMs - this.startedMs) / 1000, _timestamp: nowMs / 1000 };
    this.writeRow(this.row.add(step, row));
  }

  /** Writes a finished step's history record. */
  private writeRow(done: { step: number; values: Record<string, unknown> } | null): void {
    if (done === null) return;
    Object.assign(this.lastValues, done.values);
    this.append({ history: { item: items(done.values), step: { num: done.step } } });
  }

  /** Serialises a record (numbered from 1) and appends it in the log's framing. */
  private append(fields: Record<string, unknown>): void {
    this.num += 1;
    const record = RECORD.encode(RECORD.fromObject({ num: this.num, ...fields })).finish();
    const framed = frameRecord(record, this.offset);
    appendFileSync(this.logPath, framed);
    this.offset += framed.length;
  }
}
