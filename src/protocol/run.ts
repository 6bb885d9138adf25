/** @module Training-run wire types for the dashboard: a run's config and its slash-namespaced step metrics. */
import { z } from "zod";

/** Run names: the trainer's `name` (1–200 letters, digits, `.`, `_`, `-`; they appear in URL paths). */
export const RunNameSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, "run name may hold only letters, digits, '.', '_', '-'");

/** Body of `PUT /api/runs/{name}`: the run's configuration and planned length. */
export const RunPutSchema = z.strictObject({
  config: z.record(z.string(), z.unknown()).default(() => ({})),
  total_steps: z.number().int().positive().nullable().default(null),
});
/** A run's configuration, defaults applied. */
export type RunPut = z.infer<typeof RunPutSchema>;

/** One step's metrics: `step` (an integer ≥ 0) plus any number of metrics, each a finite number or null. */
export const RunStepSchema = z
  .record(z.string(), z.number().refine(Number.isFinite, "metric must be a finite number").nullable())
  .refine((m) => Number.isInteger(m.step) && (m.step as number) >= 0, {
    message: "step must be an integer >= 0",
    path: ["step"],
  });
/** One step's metrics. */
export type RunStep = z.infer<typeof RunStepSchema>;

/** Body of `POST /api/runs/{name}/steps`: one step or a list of steps. */
export const RunStepsPostSchema = z.union([RunStepSchema.transform((step) => [step]), z.array(RunStepSchema)]);

/** A run as `GET /api/runs` lists it. Times are epoch seconds. */
export interface RunSummary {
  name: string;
  config: Record<string, unknown>;
  total_steps: number | null;
  /** Number of steps posted. */
  steps: number;
  /** Highest step posted, or null before the first. */
  last_step: number | null;
  created_at: number;
  updated_at: number;
}

/** A run with every step's metrics, in step order (`GET /api/runs/{name}`). */
export interface RunRecord extends RunSummary {
  metrics: RunStep[];
}
