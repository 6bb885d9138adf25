/**
 * @module Checks of the optimiser's answers before anything is scored; a failed check names every problem so the
 * retry can say what to fix. Pure.
 */

/** A checked answer, or the problems found in it. */
export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/** What an edit answer must satisfy. */
export interface ProposalRules {
  /** Prompts asked for: the answer must hold exactly this many. */
  count: number;
  /** Longest prompt accepted (chars, after trimming). */
  maxChars: number;
  /** Prompts already scored (the beam, earlier candidates): a proposal equal to one of them is a duplicate. */
  existing: readonly string[];
}

/** The JSON inside an answer: the text itself, or the body of its first ``` fence. */
function jsonText(answer: string): string {
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(answer);
  return (fenced?.[1] ?? answer).trim();
}

/** The prompts list of a parsed answer, or why there is none. */
function promptList(parsed: unknown): Checked<unknown[]> {
  if (Array.isArray(parsed)) return { ok: true, value: parsed };
  const prompts = (parsed as { prompts?: unknown } | null)?.prompts;
  if (parsed !== null && typeof parsed === "object" && Array.isArray(prompts)) return { ok: true, value: prompts };
  return { ok: false, problems: ['the JSON must be an object {"prompts": [...]} with a list of strings'] };
}

/** Problems of one proposal; it is added to `seen` when it has none. */
function proposalProblems(item: unknown, position: number, rules: ProposalRules, seen: Set<string>): string[] {
  if (typeof item !== "string") return [`prompt ${position} is not a string`];
  const text = item.trim();
  if (text === "") return [`prompt ${position} is empty`];
  if (text.length > rules.maxChars)
    return [`prompt ${position} is ${text.length} characters (at most ${rules.maxChars})`];
  if (seen.has(text)) return [`prompt ${position} repeats an earlier or current prompt`];
  seen.add(text);
  return [];
}

/** An edit answer's prompts (JSON object or array, fenced or not), trimmed, or every problem found. */
export function parseProposals(answer: string, rules: ProposalRules): Checked<string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(jsonText(answer));
  } catch {
    return { ok: false, problems: ["the answer is not valid JSON"] };
  }
  const list = promptList(parsed);
  if (!list.ok) return list;
  const problems: string[] = [];
  if (list.value.length !== rules.count) problems.push(`expected ${rules.count} prompts, got ${list.value.length}`);
  const seen = new Set(rules.existing.map((p) => p.trim()));
  for (const [i, item] of list.value.entries()) problems.push(...proposalProblems(item, i + 1, rules, seen));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: list.value.map((item) => (item as string).trim()) };
}

/** A critique: any non-empty text, trimmed. */
export function parseCritique(answer: string | null | undefined): Checked<string> {
  const text = (answer ?? "").trim();
  return text === "" ? { ok: false, problems: ["the critique is empty"] } : { ok: true, value: text };
}
