import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Engine } from "../engine/engine.js";
import { tempDir } from "../testing/temp-dir.js";
import { remoteServing } from "./serving.js";

/** An engine whose checkpoint is one file (nothing here loads it). */
const writer = {
  saveCheckpoint: async (dir: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), "{}");
  },
} as unknown as Engine;

describe("remote engine-server serving", () => {
  it("refuses a policy per agent before saving anything: a running engine server serves one policy", async () => {
    const dir = tempDir("arclight-remote-serving-");
    // Port 9 (discard) on loopback: nothing may be called.
    const serving = remoteServing(["http://127.0.0.1:9/v1"], dir);
    const policies = [
      { modelName: "policy-writer", engine: writer },
      { modelName: "policy-rewriter", engine: writer },
    ];
    const failed = serving.publish(policies, 1);
    await expect(failed).rejects.toThrow(/a running engine server \(--engine-url\) serves one policy, not 2/);
    await expect(failed).rejects.toThrow("from the engine server it starts itself");
    expect(existsSync(join(dir, "v1"))).toBe(false);
  });
});
