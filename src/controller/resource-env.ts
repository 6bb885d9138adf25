/**
 * @module Resources handed to agents with no code change: `resources_env` sets a variable to the value,
 * `resources_file_env` to an absolute file path holding it; the versions used are recorded as a `resources` event.
 */
import { renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { makeDirs } from "../fs/make-dirs.js";
import type { GatewayClient } from "../gateway/client.js";
import type { ResourceVersion, ResourceVersions, Rollout } from "../protocol/index.js";

/** What the controller config says about resources. */
export interface ResourceEnvConfig {
  /** Env var name → resource name; the var holds the value (a string as is, anything else as JSON). */
  resources_env: Readonly<Record<string, string>>;
  /** Env var name → resource name; the var holds the path of a file with the value. */
  resources_file_env: Readonly<Record<string, string>>;
  /** Folder of those files (`NAME-vVERSION.txt`); relative to the controller's working directory. */
  resources_dir: string;
}

/** The env vars an agent gets from resources, and the versions they came from. */
export interface ResourceEnv {
  env: Record<string, string>;
  /** Resource name → version used; empty when the config names no resource. */
  versions: ResourceVersions;
}

/** The version a rollout pins for a resource (`metadata.resources.NAME`), or undefined for the latest. */
function pinnedVersion(rollout: Rollout, name: string): number | undefined {
  const pins = (rollout.metadata as { resources?: unknown }).resources;
  if (pins === null || typeof pins !== "object") return undefined;
  const version = (pins as Record<string, unknown>)[name];
  return typeof version === "number" && Number.isInteger(version) ? version : undefined;
}

/** Makes each temporary file name of this process unique. */
let partialCounter = 0;

function text(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The env vars and versions for a rollout (pinned in `metadata.resources`, else latest). @throws {ResourceNotFound} */
export async function resolveResourceEnv(
  client: GatewayClient,
  rollout: Rollout,
  config: ResourceEnvConfig,
): Promise<ResourceEnv> {
  const out: ResourceEnv = { env: {}, versions: {} };
  const cache = new Map<string, ResourceVersion>();
  const read = async (name: string) => {
    let found = cache.get(name);
    if (found === undefined) {
      found = await client.getResource(name, pinnedVersion(rollout, name));
      cache.set(name, found);
      out.versions[name] = found.version;
    }
    return found;
  };
  for (const [envName, name] of Object.entries(config.resources_env)) {
    out.env[envName] = text((await read(name)).value);
  }
  for (const [envName, name] of Object.entries(config.resources_file_env)) {
    const resource = await read(name);
    const dir = resolve(config.resources_dir);
    makeDirs(dir);
    // One file per version, written to a temporary name and renamed into place: an agent reading the file (or a
    // concurrent agent's copy being replaced) always sees a whole value, never a half-written one.
    const path = join(dir, `${name}-v${resource.version}.txt`);
    partialCounter += 1;
    const partial = `${path}.${process.pid}.${partialCounter}.partial`;
    writeFileSync(partial, text(resource.value));
    renameSync(partial, path);
    out.env[envName] = path;
  }
  return out;
}
