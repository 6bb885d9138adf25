import pino from "pino";
import { describe, expect, it } from "vitest";
import { type TrackedTable, type Tracker, TrackerSet } from "./tracker.js";

/** A tracker recording its calls; `failOn` makes that call throw. */
class Recorder implements Tracker {
  readonly calls: string[] = [];
  constructor(
    readonly tool: string,
    private readonly failOn?: string,
  ) {}
  private record(call: string): Promise<void> {
    this.calls.push(call);
    return call.startsWith(this.failOn ?? "\0") ? Promise.reject(new Error(`${call} refused`)) : Promise.resolve();
  }
  start = () => this.record("start");
  logMetrics = (step: number, metrics: Record<string, number>) =>
    this.record(`metrics ${step} ${JSON.stringify(metrics)}`);
  logTable = (key: string, step: number, _table: TrackedTable) => this.record(`table ${key} ${step}`);
  logSummary = (key: string, value: string) => this.record(`summary ${key}=${value}`);
  finish = (status: string) => this.record(`finish ${status}`);
}

function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe("TrackerSet", () => {
  it("a failing tracker logs one warning, gets nothing more, and the others go on", async () => {
    const { log, lines } = capturedLog();
    const broken = new Recorder("mlflow", "metrics");
    const healthy = new Recorder("tensorboard");
    const set = new TrackerSet([broken, healthy], log);
    set.start({ a: 1 });
    set.logMetrics(1, { "reward/mean": 0.5 });
    set.logMetrics(2, { "reward/mean": 0.7 });
    set.logSummary("checkpoint_path", "/ckpt");
    await set.finish("finished");
    expect(broken.calls).toEqual(["start", 'metrics 1 {"reward/mean":0.5}']);
    expect(healthy.calls).toEqual([
      "start",
      'metrics 1 {"reward/mean":0.5}',
      'metrics 2 {"reward/mean":0.7}',
      "summary checkpoint_path=/ckpt",
      "finish finished",
    ]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ tracker: "mlflow", reason: 'metrics 1 {"reward/mean":0.5} refused' });
  });

  it("keeps only finite numbers of a metrics record, without its step", async () => {
    const tracker = new Recorder("wandb");
    const set = new TrackerSet([tracker]);
    set.logMetrics(3, { step: 3, "reward/mean": 0.5, name: "x", nan: Number.NaN, none: null });
    await set.flush();
    expect(tracker.calls).toEqual(['metrics 3 {"reward/mean":0.5}']);
  });
});
