import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { skipWithout } from "../testing/requirement.js";
import { TrackingConfigSchema } from "./config.js";
import { openTrackers } from "./open-trackers.js";
import { TrackerSet } from "./tracker.js";
import { crc32, frameRecord, WANDB_LOG_HEADER } from "./wandb-log.js";
import { RECORD, WandbOfflineTracker } from "./wandb-offline.js";

const READER = resolve(import.meta.dirname, "../../test/fixtures/read-wandb-log.py");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "arclight-wandb-"));
  dirs.push(dir);
  return dir;
}

/** A Python that has W&B's proto classes: `ARCLIGHT_WANDB_PYTHON`, else `ARCLIGHT_PYTHON`, else python3. */
const wandbPython = process.env.ARCLIGHT_WANDB_PYTHON || process.env.ARCLIGHT_PYTHON || "python3";
const skipWithoutWandb = () =>
  skipWithout(
    {
      name: "Python wandb (its proto classes decode the .wandb file)",
      missing: () => {
        const probe = spawnSync(wandbPython, [
          "-c",
          "import importlib.util as u, sys; sys.exit(u.find_spec('wandb') is None)",
        ]);
        return probe.status === 0 ? null : `${wandbPython} has no wandb package`;
      },
      howToGet:
        "python3 -m venv /tmp/wb && /tmp/wb/bin/pip install --retries 0 --timeout 5 --no-deps wandb protobuf, then " +
        "ARCLIGHT_WANDB_PYTHON=/tmp/wb/bin/python (wandb's own dependencies are not all in the package mirror)",
    },
    // Not in requirements-dev.txt, so CI skips rather than fails without it.
    { ci: false, fast: process.env.ARCLIGHT_TEST_FAST === "1", note: (line) => console.warn(line) },
  );

/** Reads a log's chunks back per the format (header, blocks, CRC), as a reader independent of the writer. */
function chunks(file: Buffer): { type: number; length: number; at: number }[] {
  const out: { type: number; length: number; at: number }[] = [];
  let at = 7;
  while (at < file.length) {
    const left = 32768 - (at % 32768);
    if (left < 7) {
      expect(file.subarray(at, at + left).every((b) => b === 0)).toBe(true);
      at += left;
      continue;
    }
    const length = file.readUInt16LE(at + 4);
    const type = file[at + 6] as number;
    expect(file.readUInt32LE(at)).toBe(crc32(file.subarray(at + 6, at + 7 + length)));
    out.push({ type, length, at });
    at += 7 + length;
  }
  return out;
}

describe("W&B transaction log framing", () => {
  it("has W&B's file header and CRC-32 (IEEE, zlib's) check value", () => {
    expect([...WANDB_LOG_HEADER.subarray(0, 4)].map((c) => String.fromCharCode(c)).join("")).toBe(":W&B");
    expect(WANDB_LOG_HEADER.readUInt16LE(4)).toBe(0xbee1);
    expect(WANDB_LOG_HEADER[6]).toBe(0);
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
  });

  it("splits a record across blocks (first, middles, last) and pads a block's last 6 bytes with zeros", () => {
    const big = Buffer.alloc(80_000, 7);
    const file = Buffer.concat([WANDB_LOG_HEADER, frameRecord(big, 7)]);
    const parts = chunks(file);
    expect(parts.map((c) => c.type)).toEqual([2, 3, 4]);
    expect(parts.reduce((a, c) => a + c.length, 0)).toBe(80_000);
    expect(parts[0]!.length).toBe(32768 - 7 - 7); // the file header takes the first block's first 7 bytes
    // A record ending 3 bytes before a block's end: the next one starts in the next block, after zero padding.
    const fill = Buffer.alloc(32768 - 7 - 7 - 3);
    const first = frameRecord(fill, 7);
    const second = frameRecord(Buffer.from("x"), 7 + first.length);
    expect(second.subarray(0, 3)).toEqual(Buffer.alloc(3));
    expect(chunks(Buffer.concat([WANDB_LOG_HEADER, first, second])).map((c) => [c.type, c.at])).toEqual([
      [1, 7],
      [1, 32768],
    ]);
    // Exactly 7 bytes left: an empty first chunk fills them, the data goes to the next block.
    const tight = frameRecord(Buffer.alloc(32768 - 7 - 7 - 7), 7);
    const next = frameRecord(Buffer.from("yz"), 7 + tight.length);
    expect(chunks(Buffer.concat([WANDB_LOG_HEADER, tight, next])).map((c) => [c.type, c.length])).toEqual([
      [1, 32768 - 21],
      [2, 0],
      [4, 2],
    ]);
  });
});

/** The log's records, reassembled from their chunks and decoded. */
function records(file: Buffer): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let parts: Buffer[] = [];
  for (const chunk of chunks(file)) {
    parts.push(file.subarray(chunk.at + 7, chunk.at + 7 + chunk.length));
    if (chunk.type === 1 || chunk.type === 4) {
      out.push(RECORD.toObject(RECORD.decode(Buffer.concat(parts)), { longs: Number, defaults: true }));
      parts = [];
    }
  }
  return out;
}

describe("W&B offline run", () => {
  it("writes one history record per step: a step's table and metrics are merged", async () => {
    const dir = scratch();
    const tracker = new WandbOfflineTracker(dir, "agents", "", "run-d");
    await tracker.start({});
    await tracker.logMetrics(0, { "reward/mean": 0.5 });
    await tracker.logTable("validation/rollouts", 1, { columns: ["reward"], rows: [[1]] });
    await tracker.logMetrics(1, { "reward/mean": 1, "val/loss": 0.5 });
    await tracker.logMetrics(1, { "val/reward": 0.25 });
    await tracker.logMetrics(2, { "reward/mean": 2 });
    await tracker.finish("finished");
    const history = records(readFileSync(tracker.logPath))
      .filter((r) => r.history)
      .map((r) => {
        const h = r.history as { item: { key: string }[]; step: { num: number } };
        return [
          h.step.num,
          h.item
            .map((i) => i.key)
            .filter((k) => !k.startsWith("_"))
            .sort(),
        ];
      });
    expect(history).toEqual([
      [0, ["reward/mean"]],
      [1, ["reward/mean", "val/loss", "val/reward", "validation/rollouts"]],
      [2, ["reward/mean"]],
    ]);
  });

  it("lays the run out as W&B does: wandb/offline-run-YYYYMMDD_HHMMSS-<id>/run-<id>.wandb and files/", async () => {
    const dir = scratch();
    const tracker = new WandbOfflineTracker(dir, "agents", "team", "run-a", () => Date.UTC(2026, 0, 2, 3, 4, 5));
    await tracker.start({ name: "run-a" });
    await tracker.finish("finished");
    expect(basename(tracker.runDir)).toMatch(/^offline-run-\d{8}_\d{6}-[0-9a-f]{8}$/);
    expect(basename(tracker.runDir).endsWith(tracker.runId)).toBe(true);
    expect(readdirSync(tracker.runDir).sort()).toEqual(["files", `run-${tracker.runId}.wandb`]);
    expect(readFileSync(tracker.logPath).subarray(0, 7)).toEqual(WANDB_LOG_HEADER);
  });

  it("a resumed run gets a new folder with the same run id, marked resumed in its run record", async () => {
    const dir = scratch();
    const first = new WandbOfflineTracker(dir, "agents", "", "run-e", () => Date.UTC(2026, 0, 2, 3, 4, 5));
    await first.start({});
    await first.logMetrics(1, { "reward/mean": 0.5 });
    await first.finish("failed");
    const identity = first.identity().wandb!;
    const clock = () => Date.UTC(2026, 0, 2, 3, 9, 0);
    const second = new WandbOfflineTracker(dir, "agents", "", "run-e", clock, identity);
    await second.start({});
    await second.logMetrics(2, { "reward/mean": 0.75 });
    await second.finish("finished");
    expect(second.runId).toBe(first.runId);
    expect(second.runDir).not.toBe(first.runDir);
    expect(readdirSync(join(dir, "wandb")).filter((name) => name.endsWith(`-${first.runId}`))).toHaveLength(2);
    const runOf = (path: string) => records(readFileSync(path)).find((r) => r.run)!.run as Record<string, unknown>;
    expect(runOf(first.logPath)).toMatchObject({ run_id: first.runId, resumed: false });
    expect(runOf(second.logPath)).toMatchObject({ run_id: first.runId, project: "agents", resumed: true });
    const steps = records(readFileSync(second.logPath))
      .filter((r) => r.history)
      .map((r) => (r.history as { step: { num: number } }).step.num);
    expect(steps).toEqual([2]);
  });

  it("tracking.wandb.mode offline opens this writer in WANDB_DIR (W&B's variable)", () => {
    const dir = scratch();
    const config = TrackingConfigSchema.parse({ wandb: { project: "agents", mode: "offline" } });
    const set = openTrackers(config, "run-c", { WANDB_DIR: dir });
    expect(set.tools()).toEqual(["wandb"]);
    const tracker = set.trackers[0] as WandbOfflineTracker;
    expect(tracker).toBeInstanceOf(WandbOfflineTracker);
    expect(tracker.runDir.startsWith(join(dir, "wandb", "offline-run-"))).toBe(true);
  });

  it("an unwritable folder fails the tracker with one warning; training (the caller) goes on", async () => {
    const dir = scratch();
    const file = join(dir, "not-a-dir");
    writeFileSync(file, "x");
    const warnings: unknown[] = [];
    const set = new TrackerSet([new WandbOfflineTracker(file, "agents", "", "run-b")], {
      warn: (...args: unknown[]) => void warnings.push(args),
    } as never);
    set.start({ name: "run-b" });
    set.logMetrics(1, { "reward/mean": 1 });
    set.logTable("validation", 1, { columns: ["reward"], rows: [[1]] });
    await set.finish("finished");
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).toMatch(/wandb.*(ENOTDIR|EEXIST|not a directory)/);
  });

  describe.skipIf(skipWithoutWandb())("read back with W&B's own protobuf classes", () => {
    it("holds the run, its config, every step's history, a table file, the summary and the exit code", async () => {
      const dir = scratch();
      let now = Date.UTC(2026, 0, 2, 3, 4, 5, 250);
      const tracker = new WandbOfflineTracker(dir, "agents", "team", "run-a", () => now);
      await tracker.start({ name: "run-a", loss: { clip_low: 0.2 } });
      now += 1500;
      await tracker.logMetrics(1, { "reward/mean": 0.25, "time/step_s": 1.5 });
      now += 1500;
      await tracker.logMetrics(2, { "reward/mean": 0.75, "time/step_s": 1.25 });
      await tracker.logTable("validation/rollouts", 2, { columns: ["input", "reward"], rows: [["2+2", 1]] });
      // Records past a block boundary and one split across blocks.
      for (let step = 3; step < 400; step++) await tracker.logMetrics(step, { "reward/mean": step / 1000 });
      await tracker.logSummary("checkpoint_path", "/runs/run-a/checkpoints/step-2");
      await tracker.logSummary("long", "x".repeat(40_000));
      await tracker.finish("finished");

      const read = JSON.parse(execFileSync(wandbPython, [READER, tracker.logPath], { encoding: "utf8" })) as {
        records: Record<string, Record<string, unknown>>[];
      };
      const kinds = read.records.map((r) => Object.keys(r).find((k) => k !== "num"));
      expect(kinds.slice(0, 2)).toEqual(["header", "run"]);
      expect(kinds.at(-1)).toBe("exit");
      expect(read.records.map((r) => Number(r.num))).toEqual(read.records.map((_, i) => i + 1));

      const run = read.records[1]!.run as Record<string, unknown>;
      expect(run).toMatchObject({ run_id: tracker.runId, entity: "team", project: "agents", display_name: "run-a" });
      expect(run.start_time).toBe("2026-01-02T03:04:05.250Z");
      expect(run.resumed).toBeUndefined(); // false is proto3's default: not written
      const config = (run.config as { update: { key: string; value_json: string }[] }).update;
      expect(Object.fromEntries(config.map((i) => [i.key, JSON.parse(i.value_json)]))).toEqual({
        name: "run-a",
        loss: { clip_low: 0.2 },
      });

      const rows = read.records
        .filter((r) => r.history)
        .map((r) => {
          const h = r.history as { item: { key: string; value_json: string }[]; step: { num: string } };
          return {
            step: Number(h.step.num),
            ...Object.fromEntries(h.item.map((i) => [i.key, JSON.parse(i.value_json)])),
          };
        });
      expect(rows[0]).toEqual({
        step: 1,
        _step: 1,
        "reward/mean": 0.25,
        "time/step_s": 1.5,
        _runtime: 1.5,
        _timestamp: Date.UTC(2026, 0, 2, 3, 4, 6, 750) / 1000,
      });
      expect(rows.filter((r) => "reward/mean" in r)).toHaveLength(399);
      const table = rows.find((r) => "validation/rollouts" in r)!["validation/rollouts"] as Record<string, unknown>;
      expect(table).toMatchObject({ _type: "table-file", ncols: 2, nrows: 1 });
      const files = read.records.find((r) => r.files)!.files as { files: { path: string; type: string }[] };
      expect(files.files).toEqual([{ path: table.path, type: "MEDIA" }]);
      expect(JSON.parse(readFileSync(join(tracker.runDir, "files", table.path as string), "utf8"))).toEqual({
        columns: ["input", "reward"],
        data: [["2+2", 1]],
      });

      const summaries = read.records.filter((r) => r.summary).map((r) => r.summary as { update: { key: string }[] });
      const last = summaries.at(-1)!.update.map((i) => i.key);
      expect(last).toEqual(expect.arrayContaining(["reward/mean", "checkpoint_path", "_step", "validation/rollouts"]));
      expect(read.records.at(-1)!.exit).toEqual({ runtime: 3 }); // exit_code 0 is proto3's default: not written
    });

    it("a resumed run's record carries the run id and RunRecord.resumed as W&B's proto defines it", async () => {
      const dir = scratch();
      const identity = { run_id: "0a1b2c3d", entity: "team", project: "agents" };
      const tracker = new WandbOfflineTracker(dir, "agents", "team", "run-f", Date.now, identity);
      await tracker.start({});
      await tracker.finish("finished");
      const read = JSON.parse(execFileSync(wandbPython, [READER, tracker.logPath], { encoding: "utf8" })) as {
        records: Record<string, Record<string, unknown>>[];
      };
      expect(read.records[1]!.run).toMatchObject({ run_id: "0a1b2c3d", entity: "team", resumed: true });
    });
  });
});
