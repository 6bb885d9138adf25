import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GatewayClient } from "../gateway/client.js";
import type { ResourceVersion, Rollout } from "../protocol/index.js";
import { resolveResourceEnv } from "./resource-env.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A gateway client that answers `getResource` from a fixed table (only the method this module calls). */
function clientWith(values: Record<string, ResourceVersion>): GatewayClient {
  return {
    getResource: async (name: string) => {
      const found = values[name];
      if (found === undefined) throw new Error(`no resource ${name}`);
      return found;
    },
  } as unknown as GatewayClient;
}

const rollout = { rollout_id: "ro-1", metadata: {} } as unknown as Rollout;

describe("resolveResourceEnv", () => {
  it("gives agents an absolute file path even when resources_dir is relative, and leaves no partial files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-resenv-"));
    dirs.push(dir);
    const relativeDir = relative(process.cwd(), join(dir, "res"));
    expect(isAbsolute(relativeDir)).toBe(false);
    const v: ResourceVersion = { name: "prompt", version: 3, value: "Be brief.", created_at: 0 } as ResourceVersion;
    const client = clientWith({ prompt: v });
    const config = { resources_env: {}, resources_file_env: { PROMPT_FILE: "prompt" }, resources_dir: relativeDir };
    const first = await resolveResourceEnv(client, rollout, config);
    const path = first.env.PROMPT_FILE!;
    expect(isAbsolute(path)).toBe(true);
    expect(path).toBe(join(dir, "res", "prompt-v3.txt"));
    expect(readFileSync(path, "utf8")).toBe("Be brief.");
    expect(first.versions).toEqual({ prompt: 3 });
    // A second agent of the same version gets the same whole file; no temporary files are left behind.
    const second = await resolveResourceEnv(client, rollout, config);
    expect(second.env.PROMPT_FILE).toBe(path);
    expect(readdirSync(join(dir, "res"))).toEqual(["prompt-v3.txt"]);
  });
});
