import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { tempDir } from "../testing/temp-dir.js";
import { prepareRunDir } from "./run-dir.js";

afterEach(() => {
  vi.restoreAllMocks();
});

/** runs/NAME with the given files (path → content; a path ending in / is a folder). */
function runDirWith(files: Record<string, string>): { runs: string; runDir: string } {
  const runs = join(tempDir("arclight-run-dir-"), "runs");
  const runDir = join(runs, "calc");
  mkdirSync(runDir, { recursive: true });
  for (const path of Object.keys(files).filter((p) => p.endsWith("/"))) mkdirSync(join(runDir, path));
  for (const [path, text] of Object.entries(files)) if (!path.endsWith("/")) writeFileSync(join(runDir, path), text);
  return { runs, runDir };
}

const NOW = new Date("2026-12-07T03:15:00.123Z");

describe("prepareRunDir", () => {
  it("moves aside a run that stopped before its first step, with or without --resume", () => {
    for (const resume of [false, true]) {
      const stderr = vi.spyOn(console, "error").mockImplementation(() => undefined);
      const metrics = '{"step":0,"val/reward_mean":0}\n';
      const { runs, runDir } = runDirWith({ "gateway.db": "x", "metrics.jsonl": metrics, "checkpoints/": "" });
      prepareRunDir(runDir, "calc", resume, NOW);
      expect(existsSync(runDir)).toBe(false);
      expect(readdirSync(runs)).toEqual(["calc.failed-20261207T031500Z"]);
      expect(existsSync(join(runs, "calc.failed-20261207T031500Z", "gateway.db"))).toBe(true);
      expect(stderr.mock.calls[0]?.[0]).toMatch(
        /held an earlier run that stopped before its first step; moved it to .*calc\.failed-20261207T031500Z and starting afresh$/,
      );
      // A second failure in the same second gets its own folder.
      mkdirSync(runDir);
      writeFileSync(join(runDir, "gateway.db"), "y");
      prepareRunDir(runDir, "calc", resume, NOW);
      expect(readdirSync(runs).sort()).toEqual(["calc.failed-20261207T031500Z", "calc.failed-20261207T031500Z-2"]);
      vi.restoreAllMocks();
    }
  });

  it("refuses a run that trained a step unless --resume, and keeps it in place", () => {
    const metrics = '{"step":0}\n{"step":1,"rollouts":4}\n';
    const { runDir } = runDirWith({ "gateway.db": "x", "metrics.jsonl": metrics, "checkpoints/": "" });
    expect(() => prepareRunDir(runDir, "calc", false, NOW)).toThrow(
      /^run calc: .*calc holds an earlier run \(metrics\.jsonl, checkpoints, gateway\.db\); continue it with --resume/,
    );
    const stderr = vi.spyOn(console, "error").mockImplementation(() => undefined);
    prepareRunDir(runDir, "calc", true, NOW);
    expect(existsSync(join(runDir, "metrics.jsonl"))).toBe(true);
    expect(stderr.mock.calls[0]?.[0]).toMatch(/--resume: no checkpoint in .*calc; starting at step 0$/);
  });

  it("leaves an empty or missing folder alone", () => {
    const { runDir } = runDirWith({});
    prepareRunDir(join(runDir, "..", "other"), "other", false, NOW);
    prepareRunDir(runDir, "calc", false, NOW);
    expect(existsSync(runDir)).toBe(true);
  });
});
