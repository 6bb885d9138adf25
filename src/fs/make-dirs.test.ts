import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeDirs } from "./make-dirs.js";

describe("makeDirs", () => {
  const dirs: string[] = [];
  const temp = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-make-dirs-"));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("makes a folder and its missing parents; one that exists is fine", () => {
    const root = temp();
    const deep = join(root, "a", "b", "c");
    makeDirs(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    makeDirs(deep);
    makeDirs(root);
  });

  it("refuses a path that is, or goes through, a file with ENOTDIR", () => {
    const root = temp();
    writeFileSync(join(root, "file"), "x");
    expect(() => makeDirs(join(root, "file"))).toThrow(/ENOTDIR: .*file is a file, not a folder/);
    expect(() => makeDirs(join(root, "file", "sub"))).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
  });

  it.skipIf(process.platform !== "linux")(
    "fails at once under /proc, where Node's recursive mkdir loops for ever",
    () => {
      expect(() => makeDirs("/proc/arclight-no-such/x")).toThrow(expect.objectContaining({ code: "ENOENT" }));
    },
  );
});
