/**
 * @module A writer → checker → rewriter workflow on arithmetic, in plain `openai` SDK code: the writer drafts an
 * answer, the checker judges the draft, the rewriter gives the final answer. Each role is its own client on its own
 * base URL (`…/agent/{role}/openai/v1`), which is how the gateway knows which agent made each call. Nothing here knows
 * about training: which roles train and which stay frozen is the trainer's YAML (`train.yaml`).
 */
import OpenAI from "openai";

/** The three roles, in call order. */
export const ROLES = ["writer", "checker", "rewriter"] as const;
/** One role of the workflow. */
export type Role = (typeof ROLES)[number];

/** What one run of the workflow produced: each call's response id (for rewards naming a call) and text. */
export interface WorkflowRun {
  draft: { id: string; text: string };
  verdict: { id: string; text: string };
  final: { id: string; text: string };
}

/**
 * The base URL of one role: the rollout's proxy URL with the agent segment inserted before `/openai/v1`.
 * @param baseUrl - `AGL_OPENAI_BASE_URL`, `…/mode/{mode}/openai/v1`
 * @param role - the agent name
 * @returns `…/mode/{mode}/agent/{role}/openai/v1`
 */
export function roleBaseUrl(baseUrl: string, role: Role): string {
  return baseUrl.replace(/\/openai\/v1\/?$/, `/agent/${role}/openai/v1`);
}

async function ask(client: OpenAI, content: string, maxTokens: number): Promise<{ id: string; text: string }> {
  const completion = await client.chat.completions.create({
    model: "policy",
    messages: [{ role: "user", content }],
    max_tokens: maxTokens,
  });
  return { id: completion.id, text: completion.choices[0]?.message.content ?? "" };
}

/**
 * Runs the workflow once.
 * @param question - an arithmetic expression, e.g. `3+4`
 * @param baseUrl - the rollout's OpenAI base URL
 * @param apiKey - the gateway key
 * @returns the three calls' ids and texts
 */
export async function runWorkflow(question: string, baseUrl: string, apiKey: string): Promise<WorkflowRun> {
  const client = (role: Role) => new OpenAI({ baseURL: roleBaseUrl(baseUrl, role), apiKey, maxRetries: 8 });
  const draft = await ask(client("writer"), `${question}=`, 8);
  const verdict = await ask(client("checker"), `${question}=${draft.text} ok?`, 4);
  const final = await ask(client("rewriter"), `${question}=${draft.text} ${verdict.text} so ${question}=`, 8);
  return { draft, verdict, final };
}
