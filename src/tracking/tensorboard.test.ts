import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../testing/python.js";
import { TensorboardTracker } from "./tensorboard.js";
import { crc32c, maskedCrc32c, tfRecord } from "./tfrecord.js";

const READER = resolve(import.meta.dirname, "../../test/fixtures/read-tfevents.py");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("TFRecord framing", () => {
  it("computes CRC-32C's check value and frames length, masked CRCs and data", () => {
    expect(crc32c(Buffer.from("123456789"))).toBe(0xe3069283);
    const record = tfRecord(Buffer.from("abc"));
    expect(record.readBigUInt64LE(0)).toBe(3n);
    expect(record.readUInt32LE(8)).toBe(maskedCrc32c(record.subarray(0, 8)));
    expect(record.subarray(12, 15).toString()).toBe("abc");
    expect(record.readUInt32LE(15)).toBe(maskedCrc32c(Buffer.from("abc")));
  });
});

describe.skipIf(skipWithoutPython())("TensorBoard event files, read by TensorBoard's own reader", () => {
  it("holds every step's scalars, the config, a validation table and the checkpoint path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-tb-"));
    dirs.push(dir);
    const tracker = new TensorboardTracker(dir, "run-a");
    await tracker.start({ name: "run-a", loss: { clip_low: 0.2 } });
    await tracker.logMetrics(1, { "reward/mean": 0.25, "time/step_s": 1.5 });
    await tracker.logMetrics(2, { "reward/mean": 0.75, "time/step_s": 1.25 });
    await tracker.logTable("validation/rollouts", 2, {
      columns: ["input", "reward"],
      rows: [
        ["2+2", 1],
        ["a|b", null],
      ],
    });
    await tracker.logSummary("checkpoint_path", "/runs/run-a/checkpoints/step-2");
    await tracker.logMetrics(3, { "reward/mean": 1, "time/step_s": 1 });
    await tracker.logSummary("checkpoint_path", "/runs/run-a/checkpoints/step-3");
    expect(readdirSync(join(dir, "run-a"))[0]).toMatch(/^events\.out\.tfevents\.\d+\./);

    const read = JSON.parse(execFileSync(testPython()!, [READER, join(dir, "run-a")], { encoding: "utf8" }));
    expect(read.scalars).toEqual({
      "reward/mean": [
        [1, 0.25],
        [2, 0.75],
        [3, 1],
      ],
      "time/step_s": [
        [1, 1.5],
        [2, 1.25],
        [3, 1],
      ],
    });
    expect(read.plugins).toEqual({ config: "text", "validation/rollouts": "text", checkpoint_path: "text" });
    expect(JSON.parse(read.texts.config[0][1].replace(/^```json\n|\n```$/g, ""))).toEqual({
      name: "run-a",
      loss: { clip_low: 0.2 },
    });
    expect(read.texts["validation/rollouts"]).toEqual([
      [2, "| input | reward |\n| --- | --- |\n| 2+2 | 1 |\n| a\\|b |  |"],
    ]);
    // Each checkpoint's path at the step it was saved after; the last one is the final checkpoint.
    expect(read.texts.checkpoint_path).toEqual([
      [2, "/runs/run-a/checkpoints/step-2"],
      [3, "/runs/run-a/checkpoints/step-3"],
    ]);
  });
});
