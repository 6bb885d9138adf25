import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../testing/temp-dir.js";
import { DataCursor, epochOrder, readJsonl } from "./data-order.js";

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ index: i, input: { q: i } }));

describe("data order", () => {
  it("shuffles each epoch as a permutation that depends on seed and epoch only", () => {
    const order = epochOrder(10, 7, 0);
    expect([...order].sort((a, b) => a - b)).toEqual([...Array(10).keys()]);
    expect(epochOrder(10, 7, 0)).toEqual(order);
    expect(epochOrder(10, 7, 1)).not.toEqual(order);
    expect(epochOrder(10, 8, 0)).not.toEqual(order);
  });

  it("a cursor restarted at a saved position draws the same inputs as one that never stopped", () => {
    const straight = new DataCursor(items(5), 3);
    const drawn = Array.from({ length: 12 }, () => straight.next());
    const first = new DataCursor(items(5), 3);
    for (let i = 0; i < 7; i++) first.next();
    const resumed = new DataCursor(items(5), 3, first.current);
    const rest = Array.from({ length: 5 }, () => resumed.next());
    expect(rest).toEqual(drawn.slice(7));
    expect(drawn.slice(0, 5).map((d) => d.epoch)).toEqual([0, 0, 0, 0, 0]);
    expect(drawn[5]?.epoch).toBe(1);
  });

  it("refuses an empty data set and names the file and line of a bad JSONL line", () => {
    expect(() => new DataCursor([], 0)).toThrow(RangeError);
    const dir = tempDir("arclight-data-");
    const path = join(dir, "train.jsonl");
    writeFileSync(path, '{"a":1}\n\n{oops\n');
    expect(() => readJsonl(path)).toThrow(`${path}:3`);
    writeFileSync(path, '{"a":1}\n\n{"a":2}\n');
    expect(readJsonl(path)).toEqual([
      { index: 0, input: { a: 1 } },
      { index: 1, input: { a: 2 } },
    ]);
  });
});
