/**
 * @module TensorBoard event files: `Event` protobufs (TensorFlow's `event.proto` / `summary.proto`, the fields
 * TensorBoard reads) in TFRecord framing, one file per run in `<dir>/<run name>/`. Scalars are `simple_value`
 * summaries; the config, tables and the checkpoint path are text-plugin summaries (a string tensor of markdown).
 */
import { appendFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import protobuf from "protobufjs";
import { makeDirs } from "../fs/make-dirs.js";
import { tfRecord } from "./tfrecord.js";
import type { TrackedTable, Tracker } from "./tracker.js";

/** The subset of TensorFlow's event.proto, summary.proto, tensor.proto and tensor_shape.proto written here. */
const SCHEMA = `
syntax = "proto3";
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what { string file_version = 3; Summary summary = 5; }
}
message Summary { repeated SummaryValue value = 1; }
message SummaryValue {
  string tag = 1;
  SummaryMetadata metadata = 9;
  oneof value { float simple_value = 2; TensorProto tensor = 8; }
}
message SummaryMetadata {
  PluginData plugin_data = 1;
  message PluginData { string plugin_name = 1; bytes content = 2; }
}
message TensorProto {
  int32 dtype = 1;
  TensorShapeProto tensor_shape = 2;
  repeated bytes string_val = 8;
}
message TensorShapeProto { repeated Dim dim = 2; message Dim { int64 size = 1; } }
`;
const EVENT = protobuf.parse(SCHEMA, { keepCase: true }).root.lookupType("Event");
/** `DataType.DT_STRING` in TensorFlow's types.proto. */
const DT_STRING = 7;

/** Writes one run's event file. */
export class TensorboardTracker implements Tracker {
  /** The tool, as warnings name it. */
  readonly tool = "tensorboard";
  private readonly path: string;
  /** The last step metrics or a table were logged at: where run-level texts (the checkpoint path) go. */
  private lastStep = 0;

  /**
   * @param dir - the `tracking.tensorboard.dir` folder; the run's file goes into `<dir>/<runName>/`
   * @param runName - the run's name
   * @param nowMs - the clock of `wall_time`
   */
  constructor(
    dir: string,
    runName: string,
    private readonly nowMs: () => number = Date.now,
  ) {
    const seconds = Math.floor(nowMs() / 1000);
    this.path = join(dir, runName, `events.out.tfevents.${seconds}.${hostname()}.${process.pid}.arclight`);
  }

  /** @returns the event file's path */
  file(): string {
    return this.path;
  }

  async start(config: Record<string, unknown>): Promise<void> {
    makeDirs(dirname(this.path));
    this.write({ file_version: "brain.Event:2" }, 0);
    this.writeText("config", 0, `\`\`\`json\n${JSON.stringify(config, null, 2)}\n\`\`\``);
  }

  async logMetrics(step: number, metrics: Record<string, number>): Promise<void> {
    const value = Object.entries(metrics).map(([tag, v]) => ({ tag, simple_value: v }));
    this.lastStep = Math.max(this.lastStep, step);
    if (value.length > 0) this.write({ summary: { value } }, step);
  }

  async logTable(key: string, step: number, table: TrackedTable): Promise<void> {
    const line = (cells: unknown[]) => `| ${cells.map((c) => String(c ?? "").replaceAll("|", "\\|")).join(" | ")} |`;
    const markdown = [line(table.columns), line(table.columns.map(() => "---")), ...table.rows.map(line)].join("\n");
    this.lastStep = Math.max(this.lastStep, step);
    this.writeText(key, step, markdown);
  }

  /**
   * Writes a run-level text at the last step logged, so a checkpoint's path sits at the step it was saved after
   * (each checkpoint is reported after its step's metrics) and the final path at the run's last step.
   */
  async logSummary(key: string, value: string): Promise<void> {
    this.writeText(key, this.lastStep, value);
  }

  async finish(): Promise<void> {}

  /** A text-plugin summary: a scalar string tensor holding markdown. */
  private writeText(tag: string, step: number, text: string): void {
    const tensor = { dtype: DT_STRING, tensor_shape: {}, string_val: [Buffer.from(text, "utf8")] };
    const metadata = { plugin_data: { plugin_name: "text", content: Buffer.alloc(0) } };
    this.write({ summary: { value: [{ tag, metadata, tensor }] } }, step);
  }

  private write(fields: Record<string, unknown>, step: number): void {
    const event = EVENT.fromObject({ wall_time: this.nowMs() / 1000, step, ...fields });
    appendFileSync(this.path, tfRecord(EVENT.encode(event).finish()));
  }
}
