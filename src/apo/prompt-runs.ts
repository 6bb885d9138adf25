/**
 * @module Real rollouts with one prompt: stored as a resource version that each rollout pins in
 * `metadata.resources`, so the agent needs no change. Also the traces the optimiser is shown.
 */
import type { GatewayClient } from "../gateway/client.js";
import type { TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { runRolloutsOnce } from "../trainer/rollouts-once.js";
import type { Trace } from "./optimiser-messages.js";

/**
 * A whole batch failed before any rollout of the search succeeded: the agent or policy is broken, and scoring zeros
 * would pay the optimiser to critique failures. Later all-failed batches are scored with `reward_fillna_value`.
 */
export class PromptRunFailed extends Error {
  constructor(
    readonly label: string,
    readonly rolloutIds: readonly string[],
  ) {
    super(`every rollout of ${label} failed (${rolloutIds.length} rollouts) and none of the search had succeeded`);
    this.name = "PromptRunFailed";
  }
}

/** What a prompt's rollouts on some inputs gave. */
export interface PromptRun {
  /** Rollout ids, input order. */
  rolloutIds: string[];
  /** Final rewards, input order (`reward_fillna_value` for a failed rollout). */
  rewards: number[];
  failedIds: string[];
  /** Mean reward. */
  mean: number;
  inputs: unknown[];
}

/** How prompts are run. */
export interface PromptRunnerOptions {
  client: GatewayClient;
  /** The resource holding the prompt. */
  resource: string;
  /** Agent command, env_map, rollout timeout and reward fill value, as the trainer's rollouts take them. */
  config: Readonly<TrainerConfig>;
  /** Prefix of every rollout id of this search, unique in the gateway. */
  idPrefix: string;
  /** Called after each poll with the terminal and total rollouts of one batch. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** Cuts text to `limit` characters, marking the cut. */
function cut(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… [${text.length - limit} more chars]`;
}

/** The last assistant answer in a `model_request` event's response: content and tool calls, as text. */
function answerText(data: unknown): string {
  const message = (data as { response?: { choices?: { message?: Record<string, unknown> }[] } }).response?.choices?.[0]
    ?.message;
  if (message === undefined) return "(no answer recorded)";
  const parts: string[] = [];
  if (typeof message.content === "string" && message.content !== "") parts.push(message.content);
  for (const call of (message.tool_calls as { function?: { name?: string; arguments?: string } }[]) ?? []) {
    parts.push(`[tool call ${call.function?.name ?? "?"}(${call.function?.arguments ?? ""})]`);
  }
  return parts.length > 0 ? parts.join(" ") : "(empty answer)";
}

/** Stores prompts as resource versions and runs the agent with them. */
export class PromptRunner {
  private readonly options: PromptRunnerOptions;
  /** Whether any rollout of this runner has succeeded (see {@link PromptRunFailed}). */
  private anySucceeded = false;

  /** @param options - gateway client, resource, agent config, id prefix, progress, abort */
  constructor(options: PromptRunnerOptions) {
    this.options = options;
  }

  /** Stores a prompt as a new resource version and returns the version. */
  async store(prompt: string): Promise<number> {
    return (await this.options.client.addResource(this.options.resource, prompt)).version;
  }

  /**
   * One rollout per input pinned to `version`, awaited; ids are `PREFIX-LABEL-dINDEX-0`.
   * @throws {PromptRunFailed} when every rollout failed and none of this runner's had succeeded before
   */
  async run(version: number, items: readonly DataItem[], label: string, isTrain: boolean): Promise<PromptRun> {
    const result = await runRolloutsOnce(this.options.client, items, {
      prefix: `${this.options.idPrefix}-${label}`,
      isTrain,
      config: this.options.config,
      policyVersion: 0,
      metadata: { resources: { [this.options.resource]: version }, apo_label: label },
      ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}),
      ...(this.options.signal ? { signal: this.options.signal } : {}),
    });
    const rewards = result.rewards;
    const rolloutIds = result.records.map((r) => r.rolloutId);
    if (result.failedIds.length < rolloutIds.length) this.anySucceeded = true;
    else if (rolloutIds.length > 0 && !this.anySucceeded) throw new PromptRunFailed(label, rolloutIds);
    return {
      rolloutIds,
      rewards,
      failedIds: result.failedIds,
      mean: rewards.length === 0 ? 0 : rewards.reduce((a, b) => a + b, 0) / rewards.length,
      inputs: items.map((item) => item.input),
    };
  }

  /** The `count` lowest-reward traces (input order on a tie), cut to `traceChars`. */
  async lowestTraces(run: PromptRun, count: number, traceChars: number): Promise<Trace[]> {
    const order = run.rewards.map((reward, i) => ({ reward, i })).sort((a, b) => a.reward - b.reward);
    const traces: Trace[] = [];
    for (const { reward, i } of order.slice(0, count)) {
      const rolloutId = run.rolloutIds[i] as string;
      const output = run.failedIds.includes(rolloutId)
        ? "(the rollout failed: no answer)"
        : await this.lastAnswer(rolloutId);
      traces.push({ input: cut(JSON.stringify(run.inputs[i]), traceChars), output: cut(output, traceChars), reward });
    }
    return traces;
  }

  /** The last model answer a rollout recorded. */
  private async lastAnswer(rolloutId: string): Promise<string> {
    const calls = await this.options.client.getEvents(rolloutId, { eventType: "model_request" });
    const last = calls.at(-1);
    return last === undefined ? "(the agent made no model call)" : answerText(last.data);
  }
}
