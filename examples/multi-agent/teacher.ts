/**
 * @module Scripted teacher of the multi-agent workflow (writer → checker → rewriter), served as an `Engine` so that
 * demonstrations recorded through the gateway carry the embedded policy's own token ids (as the calculator's
 * teacher does). Its writer is wrong on a set share of the questions (off by one), its checker answers `no` to a
 * wrong draft and `ok` to a right one, and its rewriter always gives the value: a student warm-started on it has a
 * writer worth correcting and a rewriter that must read the checker's verdict.
 */

import { ByteTokenizer } from "../../src/engine/embedded/tokenizer.js";
import { evaluate } from "../calculator/calculator.js";
import { promptTurns, TeacherEngine } from "../calculator/teacher-engine.js";

/** How the teacher behaves. */
export interface MultiAgentTeacherOptions {
  /** Share of the questions, in [0, 1], whose writer draft is off by one (the same questions every time). */
  writerMistakeShare?: number;
}

/** A deterministic value in [0, 1) per question, so the same questions get a wrong draft every time. */
function questionHash(question: string): number {
  let hash = 2166136261;
  for (const char of question) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash / 2 ** 32;
}

/**
 * The teacher's answer to one role's prompt, read from the prompt's shape (workflow.ts): the writer's `Q=`, the
 * checker's `Q=D ok?`, the rewriter's `Q=D V so Q=`.
 * @param prompt - the user message of the call
 * @param options - the writer's mistake share (default 0)
 * @returns the answer text; empty for a prompt that is none of the three
 */
export function teacherAnswer(prompt: string, options: MultiAgentTeacherOptions = {}): string {
  const rewriter = /^(.+)=(.*) (\S+) so \1=$/.exec(prompt);
  if (rewriter !== null) return String(evaluate(rewriter[1] as string));
  const checker = /^(.+)=(.*) ok\?$/.exec(prompt);
  if (checker !== null) {
    return Number((checker[2] as string).trim()) === evaluate(checker[1] as string) ? "ok" : "no";
  }
  const writer = /^(.+)=$/.exec(prompt);
  if (writer === null) return "";
  const question = writer[1] as string;
  const wrong = questionHash(question) < (options.writerMistakeShare ?? 0);
  return String(evaluate(question) + (wrong ? 1 : 0));
}

/**
 * The teacher as an `Engine` on the embedded policy's byte tokens: each generation is the answer to the prompt's last
 * user turn, then `<|im_end|>`. Generation is deterministic, logprobs 0; it cannot be trained.
 */
export class MultiAgentTeacherEngine extends TeacherEngine {
  private readonly bytes = new ByteTokenizer();
  private readonly teacher: MultiAgentTeacherOptions;

  /** @param options - how the teacher behaves (see {@link MultiAgentTeacherOptions}) */
  constructor(options: MultiAgentTeacherOptions = {}) {
    super(256);
    this.teacher = options;
  }

  /** The answer's ids for a rendered prompt, `<|im_end|>` last (alone for a prompt the teacher cannot read). */
  override turnIds(promptTokenIds: readonly number[]): number[] {
    const turns = promptTurns(this.bytes.decode([...promptTokenIds], false));
    const user = turns.filter((turn) => turn.role === "user").at(-1);
    const text = user === undefined ? "" : teacherAnswer(user.text, this.teacher);
    return [...this.bytes.encode(text), this.bytes.imEndId];
  }
}
