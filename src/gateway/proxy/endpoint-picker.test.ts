import { describe, expect, it } from "vitest";
import type { Model } from "../../protocol/index.js";
import { EndpointPicker, fnv1a } from "./upstream.js";

const endpoints: Model[] = ["http://c:8000/v1", "http://a:8000/v1", "http://b:8000/v1"].map((endpoint) => ({
  model: "m",
  endpoint,
  version: 0,
}));
const sorted = ["http://a:8000/v1", "http://b:8000/v1", "http://c:8000/v1"];

describe("EndpointPicker", () => {
  it("picks sorted[fnv1a(rolloutId) mod n], whatever order the endpoints are listed in", () => {
    const picker = new EndpointPicker(1000, 60_000);
    for (const rid of ["ro-1", "ro-2", "ro-abc", "ro-zz"]) {
      const expected = sorted[fnv1a(rid) % 3];
      expect(picker.pick(endpoints, rid)?.endpoint).toBe(expected);
      expect(picker.pick([...endpoints].reverse(), rid)?.endpoint).toBe(expected);
    }
  });

  it("skips a failing endpoint during its cool-down, doubles the cool-down, and returns to it after success", () => {
    let now = 0;
    const picker = new EndpointPicker(1000, 3000, () => now);
    const rid = ["r0", "r1", "r2", "r3", "r4", "r5"].find((id) => fnv1a(id) % 3 === 0)!;
    const home = sorted[0]!;
    picker.reportFailure(home);
    expect(picker.pick(endpoints, rid)?.endpoint).toBe(sorted[1]);
    now = 1000;
    expect(picker.pick(endpoints, rid)?.endpoint).toBe(home); // cool-down over: probe it again
    picker.reportFailure(home); // second failure: 2000 ms
    now = 2999;
    expect(picker.isCoolingDown(home)).toBe(true);
    now = 3000;
    expect(picker.isCoolingDown(home)).toBe(false);
    picker.reportFailure(home); // third: 4000 ms capped at 3000
    now = 5999;
    expect(picker.isCoolingDown(home)).toBe(true);
    picker.reportSuccess(home);
    expect(picker.pick(endpoints, rid)?.endpoint).toBe(home);
  });

  it("tries the endpoint whose cool-down ends first when every endpoint is cooling down", () => {
    let now = 0;
    const picker = new EndpointPicker(1000, 60_000, () => now);
    picker.reportFailure(sorted[0]!);
    picker.reportFailure(sorted[2]!);
    now = 10;
    picker.reportFailure(sorted[1]!);
    picker.reportFailure(sorted[2]!);
    expect(picker.pick(endpoints, "any")?.endpoint).toBe(sorted[0]);
    expect(picker.pick([], "any")).toBeUndefined();
  });
});
