import { describe, expect, it } from "vitest";
import { JOB_NAME_PREFIX, jobNameFor, labelValueFor, MAX_JOB_NAME_LENGTH } from "./job-name.js";

const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe("jobNameFor", () => {
  it("keeps a short lowercase id readable on attempt 0, as AGL's agl-rollout-{id}", () => {
    expect(jobNameFor("r1", "0")).toBe(`${JOB_NAME_PREFIX}r1`);
  });

  it("hashes ids with capitals or illegal characters, so ids differing only there never share a Job", () => {
    const a = jobNameFor("Run:1", "0");
    const b = jobNameFor("run-1", "0");
    const c = jobNameFor("run_1", "0");
    expect(new Set([a, b, c]).size).toBe(3);
    for (const name of [a, c]) expect(name).toMatch(/^arclight-rollout-run-1-[0-9a-f]{10}$/);
  });

  it("gives each attempt of a rollout its own Job", () => {
    expect(jobNameFor("r1", "1")).not.toBe(jobNameFor("r1", "0"));
    expect(jobNameFor("r1", "1")).toBe(jobNameFor("r1", "1"));
  });

  it("stays a DNS-1123 label of at most 63 characters for any legal rollout id", () => {
    for (const id of ["x".repeat(200), "A.b_c:d-e", "---", "9", "a".repeat(46), "..::__"]) {
      const name = jobNameFor(id, "12");
      expect(name.length).toBeLessThanOrEqual(MAX_JOB_NAME_LENGTH);
      expect(name).toMatch(DNS_1123_LABEL);
    }
  });

  it("switches to a hash once the plain name would pass 63 characters", () => {
    expect(jobNameFor("a".repeat(46), "0")).toBe(`${JOB_NAME_PREFIX}${"a".repeat(46)}`);
    expect(jobNameFor("a".repeat(47), "0")).toMatch(/-[0-9a-f]{10}$/);
  });
});

describe("labelValueFor", () => {
  it("keeps valid label values and rewrites others into valid, distinct ones", () => {
    expect(labelValueFor("Rollout_1.a")).toBe("Rollout_1.a");
    const long = labelValueFor("r".repeat(100));
    const colon = labelValueFor("a:b");
    expect(long.length).toBeLessThanOrEqual(63);
    expect(colon).toMatch(/^a-b-[0-9a-f]{10}$/);
    expect(labelValueFor(":::")).toMatch(/^[0-9a-f]{10}$/);
  });
});
