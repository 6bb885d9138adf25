/**
 * @module `arclight inspect ROLLOUT_ID`: prints, as JSON, the training rows the sample adapter makes from one
 * rollout's events (per row: prompt and response token ids, loss mask, logprobs, mismatches), via `buildRolloutRows`,
 * optionally from one agent's calls only (`--agent`); or, with `--level spans`, the rollout's span tree with its
 * model calls and rewards placed inside, as text.
 */
import type { Command } from "commander";
import { GatewayClient } from "../gateway/client.js";
import { agentFilter } from "../protocol/agent-match.js";
import { buildSpanTree, currentAttemptOf, dataIdOf } from "../protocol/index.js";
import { buildRolloutRows } from "../trainer/batch.js";
import type { TripletEventFields } from "../trainer/triplets.js";
import { CliError } from "./cli-error.js";
import { positiveInt } from "./common-flags.js";
import { resolveKey } from "./key-source.js";
import { breakLine, describeBreaks, type MergeBreakText } from "./merge-break-text.js";
import { readableJson } from "./readable-json.js";
import { renderSpanTree } from "./span-tree-text.js";

/** Flags of `arclight inspect` as commander hands them over. */
interface InspectFlags {
  gatewayUrl?: string;
  key?: string;
  keyFile?: string;
  level: string;
  agent?: string[];
  maxPrompt: string;
  maxResponse: string;
  rewardFillna: string;
}

/** The JSON printed for one rollout. */
export interface InspectReport {
  rollout_id: string;
  data_id: string;
  state: string;
  reward: number;
  reward_filled: boolean;
  level: "transition" | "trajectory";
  rows: {
    prompt_token_ids: number[];
    response_token_ids: number[];
    loss_mask: number[];
    logprobs: (number | null)[];
    policy_versions: number[];
    turns: number[];
    /** Mismatches that started this row (its first turn did not extend the previous row). */
    mismatches: MergeBreakText[];
  }[];
  /** Each merge break with the ids and decoded text on both sides of its first difference. */
  mismatches: MergeBreakText[];
  counts: Record<string, number>;
}

/**
 * Reads a rollout and its triplet events from the gateway and builds its rows.
 * @param client - gateway client
 * @param rolloutId - the rollout
 * @param options - aggregation level, limits, reward fill value
 * @returns the report printed by the command
 * @throws {RolloutNotFound} when the gateway has no such rollout
 */
export async function inspectRollout(
  client: GatewayClient,
  rolloutId: string,
  options: {
    level: "transition" | "trajectory";
    maxPrompt: number;
    maxResponse: number;
    rewardFillna: number;
    /** Keep only these agents' model calls; every call when absent. */
    agents?: ReadonlySet<string>;
  },
): Promise<InspectReport> {
  const { rollout } = await client.getRollout(rolloutId);
  const events = await client.getTripletEvents(rolloutId);
  const dataId = dataIdOf(rollout.input);
  const { triplets, aggregate } = buildRolloutRows(
    { rolloutId, dataId, events },
    {
      level: options.level,
      limits: { maxPromptLength: options.maxPrompt, maxResponseLength: options.maxResponse },
      rewardFillnaValue: options.rewardFillna,
      ...(options.agents ? { agents: agentFilter([...options.agents]) } : {}),
    },
  );
  const model = modelOf(events);
  const decode = async (ids: readonly number[]) => (model === undefined ? {} : client.detokenize(model, ids));
  const mismatches = await describeBreaks(triplets.calls, aggregate.mismatches, decode);
  return {
    rollout_id: rolloutId,
    data_id: dataId,
    state: rollout.status.state,
    reward: triplets.reward,
    reward_filled: triplets.rewardFilled,
    level: options.level,
    rows: aggregate.rows.map((row) => ({
      prompt_token_ids: row.promptTokenIds,
      response_token_ids: row.responseTokenIds,
      loss_mask: row.lossMask,
      logprobs: row.oldLogprobs,
      policy_versions: row.policyVersions,
      turns: row.turns,
      mismatches: mismatches.filter((m) => m.turn === row.turns[0]),
    })),
    mismatches,
    counts: {
      calls: triplets.calls.length,
      truncated_rows: aggregate.truncatedRows,
      dropped_rows: aggregate.droppedRows,
      empty_rows: aggregate.emptyRows,
      error_calls: triplets.errorCalls,
      incomplete_calls: triplets.incompleteCalls,
      malformed_events: triplets.malformedEvents,
    },
  };
}

/** The model name of the rollout's first recorded call, the name its servers are registered under. */
function modelOf(events: readonly TripletEventFields[]): string | undefined {
  for (const event of events) {
    const model = (event.data as { server?: { model?: unknown } } | null)?.server?.model;
    if (event.event_type === "model_request" && typeof model === "string" && model !== "") return model;
  }
  return undefined;
}

/**
 * The span tree of a rollout's latest attempt, as text lines.
 * @param client - gateway client
 * @param rolloutId - the rollout
 * @returns a header line, then the tree (see `span-tree-text.ts`)
 * @throws {RolloutNotFound} when the gateway has no such rollout
 */
export async function inspectSpans(client: GatewayClient, rolloutId: string): Promise<string[]> {
  const { rollout } = await client.getRollout(rolloutId);
  const events = await client.getEvents(rolloutId);
  const attempt = events[0]?.attempt_id ?? currentAttemptOf(rollout.status);
  const header = `rollout ${rolloutId} attempt ${attempt} (${rollout.status.state}): ${events.length} events`;
  return [header, ...renderSpanTree(buildSpanTree(events))];
}

/**
 * Registers `arclight inspect`.
 * @param program - the root commander program
 */
export function registerInspect(program: Command): void {
  program
    .command("inspect")
    .description("Print, as JSON, the training rows the trainer would make from one rollout's events")
    .argument("<rollout_id>", "the rollout to inspect")
    .option("--gateway-url <url>", "gateway base URL (also ARCLIGHT_GATEWAY_URL; default http://127.0.0.1:8080)")
    .option("--key <key>", "gateway API key (visible in ps: prefer ARCLIGHT_KEY, AGL_KEY or --key-file)")
    .option("--key-file <path>", "file whose first line is the key; also ARCLIGHT_KEY_FILE")
    .option(
      "--level <level>",
      "trajectory | transition | spans (the span tree with model calls, as text)",
      "trajectory",
    )
    .option("--agent <name...>", "rows from these agents' model calls only (trajectory, transition)")
    .option("--max-prompt <n>", "maximum prompt length (tokens)", "1024")
    .option("--max-response <n>", "maximum response-region length (tokens)", "1024")
    .option("--reward-fillna <value>", "reward used when the rollout posted none", "0")
    .action(async (rolloutId: string, flags: InspectFlags) => {
      if (flags.level !== "trajectory" && flags.level !== "transition" && flags.level !== "spans") {
        throw new CliError(`--level ${flags.level}: expected trajectory, transition or spans`);
      }
      const rewardFillna = Number(flags.rewardFillna);
      if (!Number.isFinite(rewardFillna))
        throw new CliError(`--reward-fillna ${flags.rewardFillna}: expected a number`);
      const client = new GatewayClient({
        baseUrl: flags.gatewayUrl ?? process.env.ARCLIGHT_GATEWAY_URL ?? "http://127.0.0.1:8080",
        key: resolveKey("inspect", flags, process.env),
        retries: 1,
      });
      try {
        if (flags.level === "spans") {
          process.stdout.write(`${(await inspectSpans(client, rolloutId)).join("\n")}\n`);
          return;
        }
        const report = await inspectRollout(client, rolloutId, {
          level: flags.level,
          agents: flags.agent ? new Set(flags.agent) : undefined,
          maxPrompt: positiveInt("--max-prompt", flags.maxPrompt),
          maxResponse: positiveInt("--max-response", flags.maxResponse),
          rewardFillna,
        });
        process.stdout.write(`${readableJson(report)}\n`);
        // The breaks once more as text on stderr, where a terminal shows them under the JSON.
        for (const entry of report.mismatches) console.error(`arclight inspect: ${breakLine(entry)}`);
      } finally {
        await client.close();
      }
    });
}
