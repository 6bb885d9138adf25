/**
 * @module English number words for 0–999 ("forty-two", "three hundred five"), both ways: the data generator writes
 * them, the scripted teacher reads them back.
 */

const ONES = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
  "thirteen",
  "fourteen",
  "fifteen",
  "sixteen",
  "seventeen",
  "eighteen",
  "nineteen",
] as const;
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"] as const;

/** Largest number {@link numberToWords} writes. */
export const MAX_WORD_NUMBER = 999;

/**
 * Writes a whole number in English words, hyphenating tens and units and leaving out "and":
 * 7 → "seven", 42 → "forty-two", 305 → "three hundred five".
 * @param n - an integer in [0, 999]
 * @returns the words, lower case, single spaces
 * @throws {RangeError} when `n` is not an integer in [0, 999]
 */
export function numberToWords(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > MAX_WORD_NUMBER) throw new RangeError(`numberToWords: ${n} not in 0..999`);
  if (n < 20) return ONES[n] as string;
  if (n < 100) {
    const unit = n % 10;
    return unit === 0 ? (TENS[n / 10] as string) : `${TENS[Math.floor(n / 10)]}-${ONES[unit]}`;
  }
  const rest = n % 100;
  const hundreds = `${ONES[Math.floor(n / 100)]} hundred`;
  return rest === 0 ? hundreds : `${hundreds} ${numberToWords(rest)}`;
}

/** Value of one number word ("seven", "forty"), or undefined for anything else. */
function wordValue(word: string): number | undefined {
  const one = (ONES as readonly string[]).indexOf(word);
  if (one >= 0) return one;
  const ten = (TENS as readonly string[]).indexOf(word);
  return ten >= 2 ? ten * 10 : undefined;
}

/**
 * Reads a number written in words, the inverse of {@link numberToWords}: "forty-two" → 42,
 * "three hundred five" → 305; also accepts "forty two" (no hyphen) and a bare "hundred" multiplier.
 * @param words - the number words, already split on spaces and hyphens, lower case
 * @returns the value, or undefined when the words are not a number in 0–999
 */
export function wordsToNumber(words: readonly string[]): number | undefined {
  if (words.length === 0) return undefined;
  let total = 0;
  let current = 0;
  let wordsInGroup = 0;
  let sawHundred = false;
  for (const word of words) {
    if (word === "hundred") {
      if (sawHundred || wordsInGroup !== 1 || current === 0 || current > 9) return undefined;
      total = current * 100;
      current = 0;
      wordsInGroup = 0;
      sawHundred = true;
      continue;
    }
    const value = wordValue(word);
    if (value === undefined) return undefined;
    // Only a unit after a ten ("forty two") may share a group; "ten five" or "zero seven" is not one number.
    const unitAfterTen = wordsInGroup === 1 && current >= 20 && current % 10 === 0 && value > 0 && value < 10;
    if (wordsInGroup > 0 && !unitAfterTen) return undefined;
    if (sawHundred && value === 0) return undefined;
    current += value;
    wordsInGroup += 1;
  }
  return total + current;
}

/** True when `word` is a number word or "hundred" (possibly hyphenated, e.g. "forty-two"). */
export function isNumberWord(word: string): boolean {
  return word.split("-").every((part) => part === "hundred" || wordValue(part) !== undefined);
}
