import { describe, expect, it } from "vitest";
import { roundOutcome, type ScoredPrompt, selectBeam } from "./beam.js";

const scored = (id: string, score: number): ScoredPrompt => ({
  id,
  prompt: id,
  version: 1,
  score,
  round: 0,
  parentId: null,
});

describe("selectBeam", () => {
  it("keeps the top prompts by score, best first", () => {
    const pool = [scored("p0", 0.2), scored("p1", 0.9), scored("p2", 0.5), scored("p3", 0.1)];
    expect(selectBeam(pool, 2).map((p) => p.id)).toEqual(["p1", "p2"]);
  });

  it("keeps the older prompt on a tie: a candidate must beat its parent to replace it", () => {
    const pool = [scored("p0", 0.5), scored("p1", 0.5), scored("p2", 0.5)];
    expect(selectBeam(pool, 1).map((p) => p.id)).toEqual(["p0"]);
  });

  it("returns the whole pool when it is smaller than the width", () => {
    expect(selectBeam([scored("p0", 0.1)], 3).map((p) => p.id)).toEqual(["p0"]);
  });

  it("refuses a width below 1", () => {
    expect(() => selectBeam([scored("p0", 0.1)], 0)).toThrow(RangeError);
  });
});

describe("roundOutcome", () => {
  it("a better best score is a gain and resets the stale count", () => {
    expect(roundOutcome(0.5, 0.75, 2, 3)).toEqual({ gain: 0.25, stale: 0, stop: false });
  });

  it("an equal best score is no gain; the search stops when the stale rounds reach the patience", () => {
    expect(roundOutcome(0.5, 0.5, 0, 2)).toEqual({ gain: 0, stale: 1, stop: false });
    expect(roundOutcome(0.5, 0.5, 1, 2)).toEqual({ gain: 0, stale: 2, stop: true });
  });
});
