/** The controller state file: round trip, a missing file, and unusable files that must name what is wrong. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ControllerStateFile, StateFileInvalid } from "./state-file.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "arclight-state-"));
  dirs.push(dir);
  return dir;
}

/** Loads `path` and returns the StateFileInvalid it throws. */
function loadError(path: string): StateFileInvalid {
  try {
    new ControllerStateFile(path).load();
  } catch (err) {
    if (err instanceof StateFileInvalid) return err;
    throw err;
  }
  throw new Error("load() did not throw");
}

describe("ControllerStateFile", () => {
  it("saves and loads the owned processes; a missing file is empty", () => {
    const file = new ControllerStateFile(join(tempDir(), "sub", "state.json"));
    expect(file.load().size).toBe(0);
    const record = { attempt_id: "a1", pid: 123, started_at_ms: 5, timeout_seconds: 60 };
    file.save(new Map([["r1", record]]));
    expect([...file.load()]).toEqual([["r1", record]]);
  });

  it("refuses a file that is not JSON, naming the path and the parse error", () => {
    const path = join(tempDir(), "state.json");
    writeFileSync(path, "{bad json");
    const err = loadError(path);
    expect(err.path).toBe(path);
    expect(err.reason).toMatch(/^not JSON \(/);
  });

  it("refuses JSON that is not a state file, naming the bad key", () => {
    const path = join(tempDir(), "state.json");
    writeFileSync(path, "{}");
    expect(loadError(path).reason).toMatch(/^not a controller state file \(key version: /);
  });

  it("refuses a directory", () => {
    const path = join(tempDir(), "state.json");
    mkdirSync(path);
    expect(loadError(path).reason).toBe("is a directory, expected a JSON file");
  });
});
