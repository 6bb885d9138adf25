import { describe, expect, it } from "vitest";
import { InvalidTransition } from "./errors.js";
import { assertTransition, canTransition, isTerminal, nextAttemptId } from "./state.js";

describe("rollout state machine", () => {
  it("allows queuing -> running -> succeeded and queuing -> failed", () => {
    expect(canTransition("queuing", "running")).toBe(true);
    expect(canTransition("running", "succeeded")).toBe(true);
    expect(canTransition("running", "failed")).toBe(true);
    expect(canTransition("queuing", "failed")).toBe(true);
  });

  it("forbids going backwards, skipping running to succeeded, and leaving a terminal state", () => {
    expect(canTransition("running", "queuing")).toBe(false);
    expect(canTransition("queuing", "succeeded")).toBe(false);
    expect(canTransition("succeeded", "failed")).toBe(false);
    expect(canTransition("failed", "failed")).toBe(false);
    expect(() => assertTransition("r1", "succeeded", "running")).toThrow(
      new InvalidTransition("r1", "succeeded", "running"),
    );
    expect(() => assertTransition("r1", "succeeded", "running")).toThrow(
      "Rollout r1: cannot transition succeeded -> running",
    );
  });

  it("treats a same-state patch of a live rollout as a no-op move", () => {
    expect(canTransition("running", "running")).toBe(true);
    expect(isTerminal("failed")).toBe(true);
    expect(isTerminal("running")).toBe(false);
  });

  it("numbers attempts in decimal", () => {
    expect(nextAttemptId("0")).toBe("1");
    expect(nextAttemptId("9")).toBe("10");
    expect(() => nextAttemptId("abc")).toThrow(RangeError);
  });
});
