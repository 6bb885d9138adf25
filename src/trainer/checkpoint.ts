/**
 * @module Trainer checkpoints: the engine's own checkpoint plus the trainer state (step, policy version, data cursor,
 * seed, pending async groups) under `runs/NAME/checkpoints/step-NNNNNN/`, and `latest.json` pointing at the newest.
 * Writes go to a temp name and are renamed, so a crash mid-save leaves the previous checkpoint intact.
 */
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { Engine } from "../engine/engine.js";
import { makeDirs } from "../fs/make-dirs.js";
import { parseOrThrow } from "../protocol/validate.js";
import type { GroupPlan } from "./rollout-groups.js";

const GroupPlanSchema = z.object({
  groupId: z.string(),
  dataIndex: z.number().int(),
  input: z.unknown(),
  isTrain: z.boolean(),
  batchIdx: z.number().int(),
  launchVersion: z.number().int(),
  rolloutIds: z.array(z.string()),
});

/** What the trainer needs, besides the engine's weights, to continue exactly where it stopped. */
export const TrainerStateSchema = z.strictObject({
  /** Steps completed. */
  step: z.number().int().min(0),
  /** Trainer policy version (updates applied). */
  policyVersion: z.number().int().min(0),
  /** Next input to draw: epoch and index in that epoch's seeded order. */
  data: z.strictObject({ epoch: z.number().int().min(0), index: z.number().int().min(0) }),
  /** The run's seed; the data order of every epoch is derived from it. */
  seed: z.number().int(),
  /** Async: groups launched but not yet trained on; a resumed run re-creates them with the same ids. */
  pending: z.array(GroupPlanSchema),
});
/** The trainer state in a checkpoint. */
export type TrainerState = z.infer<typeof TrainerStateSchema> & { pending: GroupPlan[] };

/** `runs/NAME/checkpoints`. */
export function checkpointsDir(runDir: string): string {
  return join(runDir, "checkpoints");
}

/** A policy as a checkpoint holds it: its agent (null: the one shared policy) and its engine. */
export interface CheckpointedPolicy {
  agent: string | null;
  engine: Engine;
}

/**
 * Saves a checkpoint: each policy's weights and optimiser state (`engine/`, or `policies/AGENT/` per agent), then the
 * trainer state, then `latest.json`.
 * @param runDir - `runs/NAME`
 * @param policies - the policies being trained
 * @param state - trainer state after `state.step` steps
 * @returns the checkpoint directory
 */
export async function saveTrainerCheckpoint(
  runDir: string,
  policies: readonly CheckpointedPolicy[],
  state: TrainerState,
): Promise<string> {
  const name = `step-${String(state.step).padStart(6, "0")}`;
  const dir = join(checkpointsDir(runDir), name);
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  makeDirs(tmp);
  for (const { agent, engine } of policies) await engine.saveCheckpoint(engineCheckpointDir(tmp, agent));
  writeFileSync(join(tmp, "trainer-state.json"), `${JSON.stringify(state, null, 2)}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  const latest = join(checkpointsDir(runDir), "latest.json");
  writeFileSync(`${latest}.tmp`, `${JSON.stringify({ dir: name, step: state.step })}\n`);
  renameSync(`${latest}.tmp`, latest);
  return dir;
}

/**
 * Finds the newest checkpoint of a run.
 * @param runDir - `runs/NAME`
 * @returns its directory and trainer state, or null when the run has none
 * @throws {ValidationFailed} when the trainer state file is malformed
 */
export function loadLatestCheckpoint(runDir: string): { dir: string; state: TrainerState } | null {
  const latest = join(checkpointsDir(runDir), "latest.json");
  if (!existsSync(latest)) return null;
  const pointer = JSON.parse(readFileSync(latest, "utf8")) as { dir: string };
  const dir = join(checkpointsDir(runDir), pointer.dir);
  const raw: unknown = JSON.parse(readFileSync(join(dir, "trainer-state.json"), "utf8"));
  const state = parseOrThrow(TrainerStateSchema, raw, `trainer state ${dir}`) as TrainerState;
  return { dir, state };
}

/**
 * The engine checkpoint inside a trainer checkpoint directory: `engine/` for the shared policy, `policies/AGENT/`
 * for an agent's own policy.
 * @param checkpointDir - the trainer checkpoint
 * @param agent - the policy's agent; null or absent: the shared policy
 */
export function engineCheckpointDir(checkpointDir: string, agent: string | null = null): string {
  return agent === null ? join(checkpointDir, "engine") : join(checkpointDir, "policies", agent);
}

/** A checkpoint whose policies are not the ones the run trains (another `agents.policy` or `agents.train`). */
export class CheckpointPoliciesMismatch extends Error {
  /** The class name, for logs. */
  override readonly name = "CheckpointPoliciesMismatch";
}

/** The agents whose policies a trainer checkpoint holds (sorted); null when it holds `policies/` not at all. */
function savedAgents(checkpointDir: string): string[] | null {
  const dir = join(checkpointDir, "policies");
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return null;
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/**
 * Checks that a trainer checkpoint holds exactly the policies a run resumes or evaluates, so that no trained policy
 * is dropped or started afresh without a word.
 * @param checkpointDir - the trainer checkpoint
 * @param agents - the run's policies' agents (null: the one shared policy)
 * @throws {CheckpointPoliciesMismatch} naming `agents.policy` or `agents.train` and what the checkpoint holds
 */
export function checkCheckpointPolicies(checkpointDir: string, agents: readonly (string | null)[]): void {
  const saved = savedAgents(checkpointDir);
  const wanted = agents.filter((agent): agent is string => agent !== null).sort();
  if (saved === null) {
    if (wanted.length === 0) return;
    throw new CheckpointPoliciesMismatch(
      `checkpoint ${checkpointDir} holds one shared policy (engine/), not a policy per agent: ` +
        "the run was trained with agents.policy shared",
    );
  }
  const list = saved.join(", ");
  if (wanted.length === 0) {
    throw new CheckpointPoliciesMismatch(
      `checkpoint ${checkpointDir} holds a policy per agent (${list}): the run was trained with agents.policy ` +
        `per_agent and agents.train naming ${list}`,
    );
  }
  if (wanted.join(",") !== saved.join(",")) {
    throw new CheckpointPoliciesMismatch(
      `checkpoint ${checkpointDir} holds the policies of ${list}, but agents.train names ${wanted.join(", ")}: ` +
        "agents.train must name the agents the run trained",
    );
  }
}
