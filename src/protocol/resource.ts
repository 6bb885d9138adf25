/**
 * @module Named, versioned resources (e.g. a system prompt): every `POST /api/resources/{name}` stores a new version
 * (1, 2, …), the latest is read by default and any version stays readable. `GET /api/resources/latest` answers in
 * Agent Lightning v1.0's `ResourcesUpdate` shape (`resources_id`, `version`, `resources`).
 * @see Agent Lightning v1.0 `agentlightning/types/resources.py` (`ResourcesUpdate`), store `add_resources` /
 *   `get_latest_resources`
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

/**
 * The latest version of every resource in AGL v1.0's `ResourcesUpdate` shape: `resources_id` names the snapshot
 * (`name@version` pairs, so it changes whenever any resource does), `version` is the sum of the versions.
 */
export interface ResourcesUpdate {
  resources_id: string;
  create_time: number;
  update_time: number;
  version: number;
  resources: Record<string, unknown>;
}

/**
 * Builds the `ResourcesUpdate` snapshot of the latest versions.
 * @param latest - the latest version of each resource
 * @returns the snapshot; `resources_id` is `"empty"` when there is no resource
 */
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
