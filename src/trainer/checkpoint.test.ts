import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointPoliciesMismatch, checkCheckpointPolicies } from "./checkpoint.js";

describe("checkCheckpointPolicies", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ckpt-policies-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const withPolicies = (...agents: string[]) => {
    for (const agent of agents) mkdirSync(join(dir, "policies", agent), { recursive: true });
  };

  it("accepts the same agents in any order, and a shared checkpoint for a shared run", () => {
    withPolicies("writer", "rewriter");
    expect(() => checkCheckpointPolicies(dir, ["writer", "rewriter"])).not.toThrow();
    expect(() => checkCheckpointPolicies(dir, ["rewriter", "writer"])).not.toThrow();
    const shared = mkdtempSync(join(tmpdir(), "ckpt-shared-"));
    mkdirSync(join(shared, "engine"));
    expect(() => checkCheckpointPolicies(shared, [null])).not.toThrow();
    rmSync(shared, { recursive: true });
  });

  it("refuses a dropped or an added agent, naming both lists", () => {
    withPolicies("writer", "rewriter");
    expect(() => checkCheckpointPolicies(dir, ["writer"])).toThrow(
      /holds the policies of rewriter, writer, but agents.train names writer/,
    );
    expect(() => checkCheckpointPolicies(dir, ["writer", "rewriter", "ghost"])).toThrow(
      /agents.train names ghost, rewriter, writer/,
    );
  });

  it("refuses a per-agent checkpoint for a shared run, and a shared one for a per-agent run", () => {
    withPolicies("writer");
    expect(() => checkCheckpointPolicies(dir, [null])).toThrow(CheckpointPoliciesMismatch);
    expect(() => checkCheckpointPolicies(dir, [null])).toThrow(
      /the run was trained with agents.policy per_agent and agents.train naming writer/,
    );
    rmSync(join(dir, "policies"), { recursive: true });
    mkdirSync(join(dir, "engine"));
    expect(() => checkCheckpointPolicies(dir, ["writer"])).toThrow(/holds one shared policy \(engine\/\)/);
  });
});
