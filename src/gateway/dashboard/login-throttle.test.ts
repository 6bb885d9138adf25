import { describe, expect, it } from "vitest";
import { LoginThrottled } from "../../protocol/index.js";
import { LoginThrottle } from "./login-throttle.js";

describe("LoginThrottle", () => {
  it("refuses an address after its wrong keys, per address, until its window ends", () => {
    let nowMs = 1_000_000;
    const throttle = new LoginThrottle(3, 60_000, () => nowMs);
    for (let i = 0; i < 3; i++) {
      throttle.check("10.0.0.1");
      throttle.recordFailure("10.0.0.1");
    }
    expect(() => throttle.check("10.0.0.1")).toThrow(LoginThrottled);
    throttle.check("10.0.0.2"); // another address is not affected
    nowMs += 59_500;
    expect(() => throttle.check("10.0.0.1")).toThrow(/try again in 1 s/);
    nowMs += 500;
    throttle.check("10.0.0.1");
  });
});
