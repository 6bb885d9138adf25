import { describe, expect, it } from "vitest";
import { type Requirement, type SkipEnvironment, skipWithout } from "./requirement.js";

function requirement(missing: string | null): Requirement {
  return { name: "Chromium", missing: () => missing, howToGet: "apt-get install chromium" };
}

function environment(flags: { ci?: boolean; fast?: boolean }): SkipEnvironment & { notes: string[] } {
  const notes: string[] = [];
  return { ci: flags.ci ?? false, fast: flags.fast ?? false, note: (line) => notes.push(line), notes };
}

describe("skipWithout", () => {
  it("runs the suite, silently, when the requirement is present", () => {
    const env = environment({});
    expect(skipWithout(requirement(null), env)).toBe(false);
    expect(env.notes).toEqual([]);
  });

  it("skips with a note naming what is missing and how to get it", () => {
    const env = environment({});
    expect(skipWithout(requirement("no browser at /usr/bin/chromium"), env)).toBe(true);
    expect(env.notes).toEqual(["skipped: needs Chromium: no browser at /usr/bin/chromium; apt-get install chromium"]);
  });

  it("fails under CI when the requirement is missing, so a broken install step is never a skip", () => {
    expect(() => skipWithout(requirement("no browser at /usr/bin/chromium"), environment({ ci: true }))).toThrow(
      "CI=true but no Chromium: no browser at /usr/bin/chromium; apt-get install chromium",
    );
  });

  it("skips under test:fast even when the requirement is present, and says npm test runs it", () => {
    const env = environment({ fast: true, ci: true });
    expect(skipWithout(requirement(null), env)).toBe(true);
    expect(env.notes).toEqual(["skipped (npm run test:fast): suites that need Chromium; npm test runs them"]);
  });
});
