import { describe, expect, it } from "vitest";
import { RolloutNotFound } from "./errors.js";

describe("RolloutNotFound", () => {
  it("quotes an id of up to 200 characters whole, and a longer one by its start and length", () => {
    const id200 = "r".repeat(200);
    expect(new RolloutNotFound(id200).message).toBe(`Rollout ${id200} not found`);
    const long = new RolloutNotFound("x".repeat(1000));
    expect(long.message).toBe(`Rollout ${"x".repeat(200)}… (1000 characters) not found`);
    expect(long.rolloutId).toHaveLength(1000);
    expect(long.status).toBe(404);
  });
});
