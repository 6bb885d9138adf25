/**
 * @module zod pieces for query strings as FastAPI reads them: integers and booleans from text, repeated keys
 * (`state_in=a&state_in=b`) as lists. A repeated scalar key or a bad value fails (422).
 */
import { z } from "zod";

/**
 * An integer query parameter.
 * @param fallback - value when absent
 * @param min - smallest accepted value
 * @param max - largest accepted value
 */
export function queryInt(fallback: number, min: number, max: number) {
  return z
    .string()
    .regex(/^-?\d+$/, "Input should be a valid integer")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((v) => v ?? fallback);
}

/** A boolean query parameter: `true|false|1|0|yes|no|on|off` (FastAPI's accepted spellings), absent → undefined. */
export const queryBool = z
  .enum(["true", "false", "1", "0", "yes", "no", "on", "off"], "Input should be a valid boolean")
  .transform((v) => v === "true" || v === "1" || v === "yes" || v === "on")
  .optional();

/**
 * A query parameter that may repeat; one value or several become a list.
 * @param item - schema of one value
 */
export function queryList<T extends z.ZodType>(item: T) {
  return z.preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(item).optional());
}
