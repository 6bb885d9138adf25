/**
 * @module Named, versioned resources (e.g. a system prompt); `latest` answers in AGL v1.0's `ResourcesUpdate` shape.
 * @see Agent Lightning v1.0 `agentlightning/types/resources.py`
 */
import { z } from "zod";

/** Resource names: 1–100 characters of letters, digits, `.`, `_`, `-` (they appear in URL paths and env config). */
export const ResourceNameSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._-]+$/, "resource name may hold only letters, digits, '.', '_', '-'");

/** Body of `POST /api/resources/{name}`: the new version's value (any JSON; a prompt is a string). */
export const ResourceCreateSchema = z.strictObject({
  value: z.unknown().refine((v) => v !== undefined, "value is required"),
});
/** Body of `POST /api/resources/{name}`. */
export type ResourceCreate = z.infer<typeof ResourceCreateSchema>;

/** One stored version of a resource. */
export const ResourceVersionSchema = z.strictObject({
  name: ResourceNameSchema,
  /** 1 for the first version of the name, +1 per post. */
  version: z.number().int().min(1),
  value: z.unknown(),
  /** Epoch seconds. */
  created_at: z.number(),
});
/** One stored version of a resource. */
export type ResourceVersion = z.infer<typeof ResourceVersionSchema>;

/** Versions of resources an attempt ran with: name → version (the `resources` event's `data.versions`). */
export type ResourceVersions = Record<string, number>;

/** AGL's `ResourcesUpdate`: `resources_id` names the `name@version` snapshot, `version` sums the versions. */
export interface ResourcesUpdate {
  resources_id: string;
  create_time: number;
  update_time: number;
  version: number;
  resources: Record<string, unknown>;
}

/** The snapshot of the latest versions; `resources_id` is `"empty"` when there is none. */
export function resourcesUpdateOf(latest: readonly ResourceVersion[]): ResourcesUpdate {
  const sorted = [...latest].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const times = sorted.map((r) => r.created_at);
  return {
    resources_id: sorted.length === 0 ? "empty" : sorted.map((r) => `${r.name}@${r.version}`).join(","),
    create_time: times.length === 0 ? 0 : Math.min(...times),
    update_time: times.length === 0 ? 0 : Math.max(...times),
    version: sorted.reduce((sum, r) => sum + r.version, 0),
    resources: Object.fromEntries(sorted.map((r) => [r.name, r.value])),
  };
}
