/**
 * @module Trajectory-level aggregation: consecutive model calls of a rollout merge into one training row while each
 * call's prompt extends the row's tokens exactly (token ids, not text); anything else starts a new row and is recorded.
 */
import { type AggregateResult, distinctVersions, type MergeMismatch } from "./aggregate-result.js";
import { applyLengthLimits, type LengthLimits } from "./row-limits.js";
import type { TrainingRow } from "./training-row.js";
import type { ModelCall, RolloutTriplets } from "./triplets.js";

/** A row being built: the row so far plus its full token sequence (prompt ⧺ response region) for prefix checks. */
interface OpenRow {
  row: TrainingRow;
  versions: number[];
  /** prompt ⧺ response region, [P + R]. */
  tokens: number[];
}

/** Starts a row from a call: its prompt, then its response with mask 1. */
function openRow(rollout: RolloutTriplets, call: ModelCall): OpenRow {
  const row: TrainingRow = {
    rolloutId: rollout.rolloutId,
    dataId: rollout.dataId,
    promptTokenIds: [...call.promptTokenIds],
    responseTokenIds: [],
    lossMask: [],
    oldLogprobs: [],
    policyVersions: [],
    turns: [],
    tokenTurns: [],
    ...(call.agentName !== undefined ? { agentName: call.agentName } : {}),
  };
  const open: OpenRow = { row, versions: [], tokens: [...call.promptTokenIds] };
  appendResponse(open, call);
  return open;
}

/** Appends a call's response (mask 1, its logprobs or null) to an open row. */
function appendResponse(open: OpenRow, call: ModelCall): void {
  const { row } = open;
  call.responseTokenIds.forEach((id, i) => {
    row.responseTokenIds.push(id);
    row.lossMask.push(1);
    row.oldLogprobs.push(call.logprobs?.[i] ?? null);
    row.tokenTurns?.push(call.turn);
    open.tokens.push(id);
  });
  row.turns.push(call.turn);
  open.versions.push(call.policyVersion);
}

/** Appends context tokens (the prompt's part past the row's tokens) with mask 0 and no logprob. */
function appendContext(open: OpenRow, contextTokenIds: readonly number[]): void {
  for (const id of contextTokenIds) {
    open.row.responseTokenIds.push(id);
    open.row.lossMask.push(0);
    open.row.oldLogprobs.push(null);
    open.row.tokenTurns?.push(-1);
    open.tokens.push(id);
  }
}

/** Whether `call` was made by a named agent other than the row's (rows of two agents never merge). */
function otherAgent(row: TrainingRow, call: ModelCall): boolean {
  return row.agentName !== undefined && call.agentName !== undefined && row.agentName !== call.agentName;
}

/**
 * Finds where `prompt` departs from `rowTokens`.
 * @param rowTokens - the open row's prompt ⧺ response region
 * @param prompt - the next call's prompt token ids
 * @returns null when `prompt` starts with `rowTokens`; else the first differing position and its kind
 */
export function findPrefixBreak(
  rowTokens: readonly number[],
  prompt: readonly number[],
): Pick<MergeMismatch, "position" | "kind"> | null {
  const shared = Math.min(rowTokens.length, prompt.length);
  for (let i = 0; i < shared; i++) {
    if (rowTokens[i] !== prompt[i]) return { position: i, kind: "token_differs" };
  }
  return prompt.length < rowTokens.length ? { position: prompt.length, kind: "prompt_shorter" } : null;
}

/**
 * Merges a rollout's calls into rows: call k+1 joins the row of call k only when prompt_{k+1} starts with that row's
 * tokens so far (its first prompt ⧺ every response and context appended since) exactly, token id by token id. The
 * tokens of prompt_{k+1} past that prefix (tool results, the newline a chat template puts after an end-of-turn
 * token, the next assistant header) become context with loss mask 0; then response_{k+1} follows with mask 1. Any
 * other case closes the row, records a {@link MergeMismatch} and starts a new row from call k+1. Finally the length
 * limits apply to each row (see {@link applyLengthLimits}). A call of another named agent starts a new row without a
 * mismatch: each agent's row trains that agent (and, with a policy per agent, that agent's policy).
 *
 * Worked example (`S` system, `U` user, `A` assistant header, `E` `<|im_end|>`, `N` newline, `T` tool result):
 * ```
 * call 0: prompt [S U A]                 response [a b E]
 * call 1: prompt [S U A a b E N T A]     response [c E]      starts with [S U A a b E] → merges
 * call 2: prompt [S U2 A]                response [d E]      differs at position 1 → new row, mismatch
 *
 * row 0: prompt [S U A]   response region [a b E N T A c E]   loss mask [1 1 1 0 0 0 1 1]
 * row 1: prompt [S U2 A]  response region [d E]               loss mask [1 1]
 * mismatches: [{ turn: 2, position: 1, kind: "token_differs" }]
 * ```
 * @param rollout - the rollout's usable calls, in order
 * @param limits - maximum prompt and response-region lengths (tokens)
 * @returns the rows in order of their first call, the limit counts and the mismatches in turn order
 * @see Tinker cookbook `trajectory_to_data` (merges observations that extend the previous context the same way)
 */
export function aggregateTrajectories(rollout: RolloutTriplets, limits: LengthLimits): AggregateResult {
  const closed: OpenRow[] = [];
  const mismatches: MergeMismatch[] = [];
  let open: OpenRow | null = null;
  for (const call of rollout.calls) {
    if (open === null) {
      open = openRow(rollout, call);
      continue;
    }
    if (otherAgent(open.row, call)) {
      // Another agent's call starts that agent's own row: no mismatch, the prompts were never meant to continue.
      closed.push(open);
      open = openRow(rollout, call);
      continue;
    }
    const broken = findPrefixBreak(open.tokens, call.promptTokenIds);
    if (broken === null) {
      appendContext(open, call.promptTokenIds.slice(open.tokens.length));
      appendResponse(open, call);
      continue;
    }
    mismatches.push({ rolloutId: rollout.rolloutId, turn: call.turn, ...broken });
    closed.push(open);
    open = openRow(rollout, call);
  }
  if (open !== null) closed.push(open);
  const rows = closed.map(({ row, versions }) => ({ ...row, policyVersions: distinctVersions(versions) }));
  return { ...applyLengthLimits(rows, limits), mismatches };
}
