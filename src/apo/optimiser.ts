/**
 * @module The optimiser LLM client (any OpenAI-compatible endpoint). A failed request or rejected answer is retried
 * once, telling the model what was wrong; a second failure is returned with its problems, never scored.
 */
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { critiqueMessages, editFormatRule, editMessages, retryMessages, type Trace } from "./optimiser-messages.js";
import { type Checked, type ProposalRules, parseCritique, parseProposals } from "./proposals.js";

/** Where the optimiser is and how it is asked. */
export interface OptimiserSettings {
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  model: string;
  apiKey: string;
  /** Per request (ms). */
  timeoutMs: number;
  temperature: number;
  maxTokens: number;
}

/** A checked answer (or its problems) and how many requests it took (1 or 2). */
export type Attempted<T> = Checked<T> & { attempts: number; seconds: number };

/** Requests per question: the first and one retry. */
const MAX_ATTEMPTS = 2;

/** Critiques prompts and proposes edits through an OpenAI-compatible endpoint. */
export class Optimiser {
  private readonly client: OpenAI;
  private readonly settings: OptimiserSettings;

  /** @param settings - endpoint, model, key, timeout, sampling */
  constructor(settings: OptimiserSettings) {
    this.settings = settings;
    // No retries inside the client: the one retry below also covers rejected answers, and tells the model why.
    this.client = new OpenAI({
      baseURL: settings.baseUrl,
      apiKey: settings.apiKey,
      timeout: settings.timeoutMs,
      maxRetries: 0,
    });
  }

  /** A critique of a prompt from its low-reward rollouts, or the problems of both attempts. */
  critique(prompt: string, traces: readonly Trace[]): Promise<Attempted<string>> {
    return this.ask(critiqueMessages(prompt, traces), parseCritique, "");
  }

  /** Edited prompts fixing what the critique found, or the problems of both attempts. */
  propose(prompt: string, critique: string, rules: ProposalRules): Promise<Attempted<string[]>> {
    const messages = editMessages(prompt, critique, rules.count, rules.maxChars);
    const rule = editFormatRule(rules.count, rules.maxChars);
    return this.ask(messages, (answer) => parseProposals(answer ?? "", rules), rule);
  }

  /** One question, asked at most twice; each attempt's problems are kept, prefixed with its number. */
  private async ask<T>(
    messages: ChatCompletionMessageParam[],
    check: (answer: string | null) => Checked<T>,
    rule: string,
  ): Promise<Attempted<T>> {
    const started = performance.now();
    const problems: string[] = [];
    let request = messages;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const answer = await this.complete(request);
      const checked: Checked<T> = answer.ok ? check(answer.value) : answer;
      const seconds = (performance.now() - started) / 1000;
      if (checked.ok) return { ...checked, attempts: attempt, seconds };
      problems.push(...checked.problems.map((p) => `attempt ${attempt}: ${p}`));
      request = retryMessages(messages, answer.ok ? (answer.value ?? "") : "", checked.problems, rule);
    }
    return { ok: false, problems, attempts: MAX_ATTEMPTS, seconds: (performance.now() - started) / 1000 };
  }

  /** One chat completion: its content, or why there is none (HTTP error, timeout, no choice). */
  private async complete(messages: ChatCompletionMessageParam[]): Promise<Checked<string | null>> {
    try {
      const completion = await this.client.chat.completions.create({
        model: this.settings.model,
        messages,
        temperature: this.settings.temperature,
        max_tokens: this.settings.maxTokens,
      });
      const choice = completion.choices?.[0];
      if (choice === undefined) return { ok: false, problems: ["the answer has no choices"] };
      return { ok: true, value: choice.message?.content ?? null };
    } catch (err) {
      return { ok: false, problems: [`optimiser request failed: ${(err as Error).message}`] };
    }
  }
}
