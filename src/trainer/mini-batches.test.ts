import { describe, expect, it } from "vitest";
import { miniBatchIndices } from "./mini-batches.js";

describe("miniBatchIndices", () => {
  it("keeps every row in one mini-batch when the size is null", () => {
    expect(miniBatchIndices(["a", "a", "b", "c"], null)).toEqual([[0, 1, 2, 3]]);
  });

  it("splits by whole groups, the last mini-batch holding the rest", () => {
    const ids = ["a", "a", "a", "b", "b", "c", "d", "d", "e"];
    expect(miniBatchIndices(ids, 2)).toEqual([[0, 1, 2, 3, 4], [5, 6, 7], [8]]);
    expect(miniBatchIndices(ids, 1)).toEqual([[0, 1, 2], [3, 4], [5], [6, 7], [8]]);
    expect(miniBatchIndices(ids, 10)).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8]]);
  });

  it("returns no mini-batch for no rows", () => {
    expect(miniBatchIndices([], 4)).toEqual([]);
  });

  it("refuses a group whose rows are not adjacent and a bad size", () => {
    expect(() => miniBatchIndices(["a", "b", "a"], 1)).toThrow(/group a are not adjacent \(row 2\)/);
    expect(() => miniBatchIndices(["a"], 0)).toThrow(RangeError);
    expect(() => miniBatchIndices(["a"], 1.5)).toThrow(RangeError);
  });
});
