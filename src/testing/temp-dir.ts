/** @module Per-test temporary directories that vitest removes when the test finishes, passed or failed. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";

/**
 * Creates a fresh directory under the OS temp dir and registers its recursive removal with `onTestFinished`, which
 * vitest runs after the test's `afterEach` hooks, so servers and children stopped there are gone before the removal.
 * Call it inside a test (not at module or `describe` level, where no test is running).
 * @param prefix - start of the directory name, e.g. `"arclight-ckpt-"`; six random characters follow
 * @returns the absolute path of the new, empty directory
 * @throws {Error} from vitest when called outside a running test
 * @see https://vitest.dev/api/#ontestfinished
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
