/**
 * @module A recorded rollout as token-level lines: the rows the trainer would build from it (the same aggregation),
 * each with prompt and response token ids, the response mask (1 on generated tokens), sampling-time logprobs and the
 * rollout's reward. The schema of a line is here too, so an export is checked before it is written.
 */
import { z } from "zod";
import { type BatchOptions, buildRolloutRows, type RolloutRecord } from "./batch.js";

const TokenIdsSchema = z.array(z.number().int().min(0));

/** One line of the token-level export: one training row of one rollout. */
export const TokenExampleSchema = z
  .strictObject({
    rollout_id: z.string(),
    data_id: z.string(),
    /** Prompt of the row's first call, [P]. */
    prompt_token_ids: TokenIdsSchema,
    /** Responses and the context between them, [R]. */
    response_token_ids: TokenIdsSchema,
    /** 1 on tokens the model generated, 0 on context (tool results, templates), [R]. */
    response_mask: z.array(z.union([z.literal(0), z.literal(1)])),
    /** Sampling-time logprob (nats) per response token, [R]; null on context and where none was recorded. */
    logprobs: z.array(z.number().nullable()),
    /** The rollout's final reward. */
    reward: z.number(),
    /** Policy versions that produced the row's responses. */
    policy_versions: z.array(z.number().int()),
  })
  .refine(
    (line) =>
      line.response_mask.length === line.response_token_ids.length &&
      line.logprobs.length === line.response_token_ids.length,
    { message: "response_token_ids, response_mask and logprobs must have one entry per response token" },
  );
/** One line of the token-level export. */
export type TokenExample = z.infer<typeof TokenExampleSchema>;

/**
 * The token-level lines of a rollout: its rows under the given aggregation (trajectory: usually one row with
 * every turn; transition: one row per call), with the rollout's reward on each.
 * @param record - the rollout's id, group and triplet events
 * @param options - aggregation level, length limits, reward fill value
 * @returns one line per row (none when the rollout has no usable call)
 */
export function tokenExamplesOf(
  record: RolloutRecord,
  options: Pick<BatchOptions, "level" | "limits" | "rewardFillnaValue">,
): TokenExample[] {
  const { triplets, aggregate } = buildRolloutRows(record, options);
  return aggregate.rows.map((row) => ({
    rollout_id: row.rolloutId,
    data_id: row.dataId,
    prompt_token_ids: row.promptTokenIds,
    response_token_ids: row.responseTokenIds,
    response_mask: row.lossMask.map((m) => (m === 1 ? 1 : 0)),
    logprobs: row.oldLogprobs,
    reward: triplets.reward,
    policy_versions: row.policyVersions,
  }));
}
