/**
 * @module Groups of rollouts as the trainer launches and tracks them: deterministic pre-assigned ids (so a resumed
 * run re-creates the same rollouts idempotently), the create bodies, and a tracker fed by the gateway's terminal cursor
 * that tells which groups are complete (every rollout terminal).
 */
import type { GatewayClient } from "../gateway/client.js";
import type { RolloutCreateInput, RolloutState } from "../protocol/index.js";
import type { TrainerConfig } from "./config.js";

/** One group: n rollouts of one input. Plain JSON, so pending groups go into checkpoints as they are. */
export interface GroupPlan {
  /** Unique per run: `NAME-eEPOCH-dINDEX` (train) or `NAME-vSTEP-dINDEX` (validation); the rollouts' data_id. */
  groupId: string;
  /** Index of the input in its file. */
  dataIndex: number;
  input: unknown;
  isTrain: boolean;
  /** `metadata.batch_idx`: the step at which the group was launched. */
  batchIdx: number;
  /** Trainer policy version when the group was launched. */
  launchVersion: number;
  /** `GROUPID-K` for K in 0..n-1. */
  rolloutIds: string[];
}

/**
 * The group id of a training input: `NAME-eEPOCH-dINDEX`.
 * @param runName - the trainer config's `name`
 * @param epoch - the data epoch the input was drawn in, from 0
 * @param dataIndex - the input's index in its file
 */
export function trainGroupId(runName: string, epoch: number, dataIndex: number): string {
  return `${runName}-e${epoch}-d${dataIndex}`;
}

/**
 * The id of rollout `k` of a group: `GROUPID-K`.
 * @param groupId - the group's id
 * @param k - the rollout's place in its group, from 0
 */
export function groupRolloutId(groupId: string, k: number): string {
  return `${groupId}-${k}`;
}

/**
 * Plans one group with pre-assigned rollout ids.
 * @param base - id prefix and group id, e.g. `NAME-e0-d17`
 * @param fields - the input, its index, train or validation, launch step and policy version
 * @param n - group size
 * @returns the plan
 */
export function planGroup(base: string, fields: Omit<GroupPlan, "groupId" | "rolloutIds">, n: number): GroupPlan {
  return { groupId: base, ...fields, rolloutIds: Array.from({ length: n }, (_, k) => groupRolloutId(base, k)) };
}

/** The input the agent receives: the data line, with `data_id` set to the group id when the line has none. */
function groupInput(plan: GroupPlan): unknown {
  const input = plan.input;
  if (input !== null && typeof input === "object" && !Array.isArray(input) && !("data_id" in input)) {
    return { ...input, data_id: plan.groupId };
  }
  return input;
}

/**
 * The local controller settings a trainer config's `controller` section implies: the allow lists that let it run the
 * agent this config names in its rollouts' `config.local` (a controller runs only commands its own config allows), and
 * whether it reuses agent processes, and the Python interpreter of a Python agent class.
 * @param controller - the trainer config's `controller` section
 * @returns `allowed_commands`, `allowed_agent_classes`, `reuse_processes` and `python`, to merge into the controller's
 *   settings
 */
export function localControllerSettings(controller: TrainerConfig["controller"]): {
  allowed_commands: string[][];
  allowed_agent_classes: string[];
  reuse_processes: boolean;
  python: string;
} {
  return {
    allowed_commands: controller.command.length > 0 ? [controller.command] : [],
    allowed_agent_classes: controller.agent_class !== null ? [controller.agent_class] : [],
    reuse_processes: controller.reuse_processes,
    python: controller.python,
  };
}

/**
 * The `POST /api/rollouts` bodies of a group: pre-assigned ids, `is_train`, timeout, `config.local` from the trainer
 * config (when it names a command or agent class) and metadata `batch_idx` / `sample_idx_in_batch` / `group_id`.
 * @param plan - the group
 * @param config - trainer config (`controller`, `rollout_timeout_seconds`)
 * @returns one create per rollout, in `plan.rolloutIds` order
 */
export function groupCreates(plan: GroupPlan, config: TrainerConfig): RolloutCreateInput[] {
  const { command, agent_class: agentClass, env_map: envMap } = config.controller;
  const local =
    command.length > 0 || agentClass !== null
      ? {
          ...(command.length > 0 ? { command } : {}),
          ...(agentClass !== null ? { agent_class: agentClass } : {}),
          env_map: envMap,
        }
      : undefined;
  return plan.rolloutIds.map((rolloutId, k) => ({
    rollout_id: rolloutId,
    input: groupInput(plan),
    is_train: plan.isTrain,
    config: { timeout_seconds: config.rollout_timeout_seconds, max_attempts: 1, ...(local ? { local } : {}) },
    metadata: {
      batch_idx: plan.batchIdx,
      sample_idx_in_batch: k,
      group_id: plan.groupId,
      launch_policy_version: plan.launchVersion,
    },
  }));
}

/**
 * Terminal states of rollouts, learnt from `GET /api/rollouts/terminal`. It keeps every terminal rollout the cursor
 * passes (a group launched later may turn out to be finished already, e.g. after a restart) until the trainer forgets
 * the group.
 */
export class GroupTracker {
  private readonly client: GatewayClient;
  private readonly terminal = new Map<string, RolloutState>();
  private cursor = 0;

  /** @param client - reads terminal rollouts from the gateway */
  constructor(client: GatewayClient) {
    this.client = client;
  }

  /** Drops a group's rollouts (after it was trained on or dropped), so the map holds only what is still needed. */
  forget(plan: GroupPlan): void {
    for (const id of plan.rolloutIds) this.terminal.delete(id);
  }

  /**
   * Reads every newly terminal rollout from the gateway's cursor (from the start of the store on the first call, so
   * rollouts that finished before a restart are seen too).
   * @throws whatever the gateway client throws
   */
  async poll(): Promise<void> {
    for (;;) {
      const page = await this.client.terminal(this.cursor, 1000);
      for (const entry of page.items) this.terminal.set(entry.rollout_id, entry.state);
      this.cursor = page.next_after;
      if (page.items.length < 1000) return;
    }
  }

  /** The terminal state of a rollout, or null while it is not terminal. */
  state(rolloutId: string): RolloutState | null {
    return this.terminal.get(rolloutId) ?? null;
  }

  /** True when every rollout of the group is terminal. */
  isComplete(plan: GroupPlan): boolean {
    return plan.rolloutIds.every((id) => this.state(id) !== null);
  }
}
