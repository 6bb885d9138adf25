/**
 * @module The judge client: asks an OpenAI-compatible endpoint (the official `openai` client, no retries of its own)
 * for a verdict and retries a failed request (timeout, 5xx, connection, bad JSON) or an unparsable reply up to
 * `max_attempts` times. It never throws and never makes up a score: an answer it could not judge gets no judged
 * reward, and the outcome says why.
 */
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { JudgeConfig } from "./config.js";
import { type Parsed, parseRanking, parseScore, rankRewards } from "./parse.js";
import { groupMessages, pointwiseMessages } from "./prompts.js";

/** What one judging produced: judged rewards in 0..1 (one per answer), or the last problem after every attempt. */
export type JudgeOutcome =
  | { ok: true; rewards: number[]; attempts: number; reply: string }
  | { ok: false; problem: string; attempts: number };

/** The judge's endpoint and manner, with the key already read. */
export type JudgeSettings = Omit<JudgeConfig, "api_key_env" | "enabled"> & { apiKey: string };

/** One kind of failure per request, for the outcome's problem. */
function requestProblem(err: unknown): string {
  if (err instanceof OpenAI.APIConnectionTimeoutError) return "judge request timed out";
  if (err instanceof OpenAI.APIError && err.status !== undefined) return `judge endpoint answered ${err.status}`;
  if (err instanceof OpenAI.APIConnectionError) return `judge endpoint unreachable (${err.message})`;
  return `judge request failed (${(err as Error).message})`;
}

/** Scores answers through an OpenAI-compatible judge. */
export class Judge {
  private readonly client: OpenAI;

  /** @param settings - endpoint, model, key, rubric, range, attempts, timeout, sampling */
  constructor(private readonly settings: JudgeSettings) {
    this.client = new OpenAI({
      baseURL: settings.base_url,
      apiKey: settings.apiKey === "" ? "none" : settings.apiKey,
      timeout: Math.round(settings.timeout_seconds * 1000),
      maxRetries: 0,
    });
  }

  /**
   * Scores one answer on the rubric.
   * @param task - the task text
   * @param answer - the answer
   * @returns `[reward]` with reward = (score − min) / (max − min), or the problem
   */
  scoreAnswer(task: string, answer: string): Promise<JudgeOutcome> {
    const { rubric, min_score: min, max_score: max } = this.settings;
    return this.ask(pointwiseMessages(rubric, task, answer, min, max), (text) => {
      const parsed = parseScore(text, min, max);
      return parsed.ok ? { ok: true, value: [(parsed.value - min) / (max - min)] } : parsed;
    });
  }

  /**
   * Ranks a group's answers against each other.
   * @param task - the task text
   * @param answers - the group's answers, [group], at least 2
   * @returns rewards from the ranking (best 1, worst 0), or the problem
   */
  rankAnswers(task: string, answers: readonly string[]): Promise<JudgeOutcome> {
    return this.ask(groupMessages(this.settings.rubric, task, answers), (text) => {
      const parsed = parseRanking(text, answers.length);
      return parsed.ok ? { ok: true, value: rankRewards(parsed.value) } : parsed;
    });
  }

  /** Asks until a reply parses or the attempts run out. */
  private async ask(
    messages: ChatCompletionMessageParam[],
    read: (text: string) => Parsed<number[]>,
  ): Promise<JudgeOutcome> {
    let problem = "";
    for (let attempt = 1; attempt <= this.settings.max_attempts; attempt++) {
      let text: string;
      problem = "";
      try {
        const completion = await this.client.chat.completions.create({
          model: this.settings.model,
          messages,
          temperature: this.settings.temperature,
          max_tokens: this.settings.max_tokens,
        });
        const choice = completion.choices?.[0];
        text = choice?.message?.content ?? "";
        if (text === "" && choice?.message?.refusal) problem = `judge refused (${choice.message.refusal})`;
      } catch (err) {
        problem = requestProblem(err);
        continue;
      }
      const parsed = read(text);
      if (parsed.ok) return { ok: true, rewards: parsed.value, attempts: attempt, reply: text };
      if (problem === "") problem = parsed.problem;
    }
    return { ok: false, problem, attempts: this.settings.max_attempts };
  }
}
