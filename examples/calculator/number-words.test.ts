import { describe, expect, it } from "vitest";
import { isNumberWord, numberToWords, wordsToNumber } from "./number-words.js";

const split = (text: string): string[] => text.split(/[\s-]+/);

describe("number words", () => {
  it.each([
    [0, "zero"],
    [7, "seven"],
    [13, "thirteen"],
    [40, "forty"],
    [42, "forty-two"],
    [100, "one hundred"],
    [305, "three hundred five"],
    [999, "nine hundred ninety-nine"],
  ])("writes %i as %j", (n, words) => {
    expect(numberToWords(n)).toBe(words);
  });

  it("reads back every number it writes, 0 to 999", () => {
    for (let n = 0; n <= 999; n += 1) expect(wordsToNumber(split(numberToWords(n)))).toBe(n);
  });

  it("accepts tens and units without a hyphen", () => {
    expect(wordsToNumber(["forty", "two"])).toBe(42);
  });

  it.each([
    ["ten five"],
    ["zero seven"],
    ["five five"],
    ["hundred"],
    ["twelve hundred"],
    ["one hundred two hundred"],
    ["one hundred zero"],
    ["forty twenty"],
    ["eleventy"],
  ])("rejects %j, which is not one number", (text) => {
    expect(wordsToNumber(split(text))).toBeUndefined();
  });

  it("refuses numbers it cannot write", () => {
    expect(() => numberToWords(1000)).toThrow(RangeError);
    expect(() => numberToWords(-1)).toThrow(RangeError);
    expect(() => numberToWords(2.5)).toThrow(RangeError);
  });

  it("tells number words from other words", () => {
    expect(isNumberWord("forty-two")).toBe(true);
    expect(isNumberWord("hundred")).toBe(true);
    expect(isNumberWord("plus")).toBe(false);
    expect(isNumberWord("forty-plus")).toBe(false);
  });
});
