/**
 * @module The multi-agent example's rollout entry point: runs the writer → checker → rewriter workflow on
 * `QUESTION`, scores the final answer with a real arithmetic evaluator (examples/calculator/calculator.ts), and posts
 * the rewards: one naming the writer's call (was its draft right?) and the final one. Run by the controller
 * (`train.yaml`), or by hand with the `AGL_*` variables of a rollout.
 *
 * Environment: `QUESTION` (the expression), `AGL_OPENAI_BASE_URL`, `AGL_KEY`, `AGL_EVENT_URL` (set by the controller).
 * Exit codes: 0 when the rewards were posted; 1 on an error; 2 on a missing variable.
 */
import { pathToFileURL } from "node:url";
import { emitReward } from "../../src/agent/index.js";
import { evaluate } from "../calculator/calculator.js";
import { runWorkflow } from "./workflow.js";

/**
 * 1 when the text's first number equals the expression's value, else 0.
 * @param text - a model's answer
 * @param expected - the evaluator's value
 */
export function scoreAnswer(text: string, expected: number): number {
  const match = /-?\d+(\.\d+)?/.exec(text);
  return match !== null && Number(match[0]) === expected ? 1 : 0;
}

async function main(): Promise<void> {
  const question = process.env.QUESTION;
  const baseUrl = process.env.AGL_OPENAI_BASE_URL;
  if (!question || !baseUrl) {
    console.error("multi-agent: QUESTION and AGL_OPENAI_BASE_URL are required");
    process.exit(2);
  }
  const expected = evaluate(question);
  const run = await runWorkflow(question, baseUrl, process.env.AGL_KEY ?? "");
  await emitReward(scoreAnswer(run.draft.text, expected), { callId: run.draft.id, source: "evaluator" });
  await emitReward(scoreAnswer(run.final.text, expected), { source: "evaluator", reason: `expected ${expected}` });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: unknown) => {
    console.error(`multi-agent: ${(err as Error).message}`);
    process.exit(1);
  });
}
