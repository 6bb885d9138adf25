/**
 * @module A deterministic calculator policy whose answers depend only on the system prompt (the tiny model cannot
 * follow instructions, so a search over it measures noise):
 * | system prompt | answer | calculator reward |
 * |---|---|---|
 * | holds neither `ANSWER:` nor `check` | `The result is N.` | 0 (no answer line) |
 * | holds `ANSWER:` but not `check` | `ANSWER: N+1` | 0.1 (format only) |
 * | holds `ANSWER:` and `check` | `ANSWER: N` | 1 (correct) |
 */
import { type ChatServer, startChatServer, systemText } from "./chat-server.js";

/** The policy's answer under a system prompt (see the module table). */
export function policyAnswer(systemPrompt: string, value: number): string {
  if (!systemPrompt.includes("ANSWER:")) return `The result is ${value}.`;
  return systemPrompt.toLowerCase().includes("check") ? `ANSWER: ${value}` : `ANSWER: ${value + 1}`;
}

/** Starts the policy server for known questions (others answer 400); register `url` as the model endpoint. */
export function startPromptSensitivePolicy(answers: ReadonlyMap<string, number>): Promise<ChatServer> {
  return startChatServer((request) => {
    const question = request.messages.find((m) => m.role === "user")?.content;
    const value = answers.get(String(question));
    if (value === undefined) return { status: 400, body: { error: { message: `unknown question ${question}` } } };
    return { content: policyAnswer(systemText(request), value) };
  });
}
