/** @module Per-test temporary directories that vitest removes when the test finishes, passed or failed. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";

/**
 * A fresh temp directory removed by `onTestFinished`, which runs after `afterEach`, so servers stopped there are gone
 * first. Call it inside a test. @see https://vitest.dev/api/#ontestfinished
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
