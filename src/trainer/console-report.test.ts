/** @module Tests of the console table: every kind of exclusion has a column. */
import { describe, expect, it } from "vitest";
import { tableLine } from "./console-report.js";

describe("console table", () => {
  it("has a column for every exclusion and both reward means", () => {
    const header = tableLine(null).trim().split(/\s+/);
    for (const column of ["reward", "rew_all", "no_call", "err", "incompl", "malform", "dedup", "lp_miss", "nonfin"])
      expect(header).toContain(column);
  });

  it("shows a count in its column and - for a value not measured", () => {
    const header = tableLine(null).trim().split(/\s+/);
    const line = tableLine({ step: 1, no_calls: 2, "reward/mean": null }).trim().split(/\s+/);
    expect(line[header.indexOf("no_call")]).toBe("2");
    expect(line[header.indexOf("reward")]).toBe("-");
  });
});
