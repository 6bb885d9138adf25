/**
 * @module The beam search over a prompt resource (APO). Each round: (1) run every beam prompt on one train
 * minibatch; (2) critique each from its worst rollouts and propose `branch_factor` edits; (3) score the candidates on
 * validation; (4) keep the top `beam_width`. The best prompt is published as the resource's newest version.
 * @see Pryzant et al., "Automatic Prompt Optimization with 'Gradient Descent' and Beam Search", arXiv:2305.03495
 */
import { DataCursor, type DataItem } from "../trainer/data-order.js";
import { roundOutcome, type ScoredPrompt, selectBeam } from "./beam.js";
import type { ApoConfig } from "./config.js";
import type { History, RoundTimings } from "./history.js";
import type { Optimiser } from "./optimiser.js";
import type { PromptRunner } from "./prompt-runs.js";

/** What a search needs. */
export interface ApoSearchOptions {
  search: Readonly<ApoConfig["search"]>;
  /** Runs prompts as real rollouts. */
  runner: PromptRunner;
  optimiser: Pick<Optimiser, "critique" | "propose">;
  train: readonly DataItem[];
  val: readonly DataItem[];
  /** The starting prompt and its resource version. */
  initial: { prompt: string; version: number };
  history: History;
  seed: number;
  /** Called after each round. */
  onRound?: (report: RoundReport) => void;
  /** Called for each optimiser answer rejected twice. */
  onBadOutput?: (round: number, parentId: string, stage: "critique" | "edit", problems: string[]) => void;
}

/** One finished round, for the progress line. */
export interface RoundReport {
  round: number;
  candidates: number;
  bad: boolean;
  beam: ScoredPrompt[];
  gain: number;
  timings: RoundTimings;
}

/** The search's outcome. */
export interface ApoResult {
  best: ScoredPrompt;
  initialScore: number;
  rounds: number;
  stopReason: "rounds" | "patience";
  /** Rounds in which the optimiser gave no usable prompt. */
  badRounds: number;
  /** The version the best prompt was published as; null when the starting prompt stayed best. */
  publishedVersion: number | null;
}

/** A proposed prompt before scoring. */
interface Candidate {
  prompt: string;
  parentId: string;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/** The state of one search. */
class Search {
  private readonly o: ApoSearchOptions;
  private readonly cursor: DataCursor;
  /** Every prompt scored so far (their texts are "existing" for duplicate checks). */
  private readonly scored: ScoredPrompt[] = [];
  beam: ScoredPrompt[] = [];

  constructor(options: ApoSearchOptions) {
    this.o = options;
    this.cursor = new DataCursor(options.train, options.seed);
  }

  /** Scores prompts on the validation inputs at once and records each. */
  async score(prompts: readonly { prompt: string; version: number; parentId: string | null }[], round: number) {
    const ids = prompts.map((_, k) => `p${this.scored.length + k}`);
    const runs = await Promise.all(
      prompts.map((p, k) => this.o.runner.run(p.version, this.o.val, `r${round}-${ids[k]}-val`, false)),
    );
    return prompts.map((p, k) => {
      const run = runs[k]!;
      const scored: ScoredPrompt = { id: ids[k]!, ...p, score: run.mean, round };
      this.scored.push(scored);
      this.o.history.append({
        type: "prompt",
        round,
        id: scored.id,
        parent_id: p.parentId,
        version: p.version,
        prompt: p.prompt,
        val_score: run.mean,
        val_rewards: run.rewards,
        failed_rollouts: run.failedIds.length,
      });
      return scored;
    });
  }

  /** Critique then edit of one beam prompt; undefined (recorded as bad output) when the optimiser fails twice. */
  async expand(parent: ScoredPrompt, run: Awaited<ReturnType<PromptRunner["run"]>>, round: number, pending: string[]) {
    const { search, optimiser, history } = this.o;
    const traces = await this.o.runner.lowestTraces(run, search.gradient_examples, search.trace_chars);
    const critique = await optimiser.critique(parent.prompt, traces);
    if (!critique.ok) return this.bad(round, parent.id, "critique", critique.problems, critique.attempts);
    history.append({
      type: "critique",
      round,
      parent_id: parent.id,
      minibatch_score: run.mean,
      traces,
      critique: critique.value,
      attempts: critique.attempts,
    });
    const existing = [...this.scored.map((p) => p.prompt), ...pending];
    const rules = { count: search.branch_factor, maxChars: search.max_prompt_chars, existing };
    const proposals = await optimiser.propose(parent.prompt, critique.value, rules);
    if (!proposals.ok) return this.bad(round, parent.id, "edit", proposals.problems, proposals.attempts);
    history.append({
      type: "proposals",
      round,
      parent_id: parent.id,
      prompts: proposals.value,
      attempts: proposals.attempts,
    });
    return proposals.value.map((prompt): Candidate => ({ prompt, parentId: parent.id }));
  }

  private bad(round: number, parentId: string, stage: "critique" | "edit", problems: string[], attempts: number) {
    this.o.history.append({ type: "bad_output", round, parent_id: parentId, stage, problems, attempts });
    this.o.onBadOutput?.(round, parentId, stage, problems);
    return undefined;
  }

  /** Steps 1–2: minibatch rollouts of every beam prompt, then critiques and proposals. */
  async propose(round: number, timings: RoundTimings): Promise<Candidate[]> {
    let started = performance.now();
    const minibatch = Array.from({ length: this.o.search.minibatch_size }, () => this.cursor.next().item);
    const runs = await Promise.all(
      this.beam.map((p) => this.o.runner.run(p.version, minibatch, `r${round}-${p.id}-mb`, true)),
    );
    timings.minibatch_s = seconds(started);
    started = performance.now();
    const candidates: Candidate[] = [];
    for (const [k, parent] of this.beam.entries()) {
      const pending = candidates.map((c) => c.prompt);
      candidates.push(...((await this.expand(parent, runs[k]!, round, pending)) ?? []));
    }
    timings.optimiser_s = seconds(started);
    return candidates;
  }

  /** Step 3: stores and scores the candidates. */
  async scoreCandidates(candidates: readonly Candidate[], round: number): Promise<ScoredPrompt[]> {
    const stored = [];
    for (const c of candidates) stored.push({ ...c, version: await this.o.runner.store(c.prompt) });
    return this.score(stored, round);
  }
}

/** Runs one round; returns its report (the beam already replaced). */
async function runRound(search: Search, round: number, o: ApoSearchOptions): Promise<Omit<RoundReport, "gain">> {
  const started = performance.now();
  const timings: RoundTimings = { minibatch_s: 0, optimiser_s: 0, scoring_s: 0, round_s: 0 };
  const candidates = await search.propose(round, timings);
  const scoringStarted = performance.now();
  const scored = await search.scoreCandidates(candidates, round);
  timings.scoring_s = seconds(scoringStarted);
  search.beam = selectBeam([...search.beam, ...scored], o.search.beam_width);
  timings.round_s = seconds(started);
  return { round, candidates: candidates.length, bad: candidates.length === 0, beam: search.beam, timings };
}

/** Runs the beam search and publishes the best prompt. @throws whatever the gateway client throws; the abort reason */
export async function runApoSearch(options: ApoSearchOptions): Promise<ApoResult> {
  const search = new Search(options);
  search.beam = await search.score([{ ...options.initial, parentId: null }], 0);
  const initialScore = search.beam[0]!.score;
  let stale = 0;
  let rounds = 0;
  let badRounds = 0;
  let stopReason: ApoResult["stopReason"] = "rounds";
  for (let round = 1; round <= options.search.rounds; round++) {
    const bestBefore = search.beam[0]!.score;
    const report = await runRound(search, round, options);
    const outcome = roundOutcome(bestBefore, report.beam[0]!.score, stale, options.search.patience);
    stale = outcome.stale;
    rounds = round;
    if (report.bad) badRounds += 1;
    const best = report.beam[0]!;
    options.history.append({
      type: "round",
      round,
      candidates: report.candidates,
      bad: report.bad,
      beam: report.beam.map((p) => ({ id: p.id, score: p.score })),
      best_id: best.id,
      best_score: best.score,
      gain: outcome.gain,
      timings: report.timings,
    });
    options.onRound?.({ ...report, gain: outcome.gain });
    if (outcome.stop && round < options.search.rounds) {
      stopReason = "patience";
      break;
    }
  }
  const best = search.beam[0]!;
  const startingStayedBest = best.parentId === null;
  const publishedVersion = startingStayedBest ? null : await options.runner.store(best.prompt);
  const result = { best, initialScore, rounds, stopReason, badRounds, publishedVersion };
  options.history.append({
    type: "result",
    best_id: best.id,
    best_score: best.score,
    initial_score: initialScore,
    rounds,
    bad_rounds: badRounds,
    stop_reason: stopReason,
    published_version: publishedVersion,
  });
  return result;
}
