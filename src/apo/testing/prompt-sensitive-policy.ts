/**
 * @module Test and bench helper: a deterministic calculator policy whose answers depend only on the system prompt, as
 * a real chat server on loopback. The embedded tiny model cannot follow instructions, so a prompt search over it
 * would measure noise; this policy makes the reward a known function of the prompt, so a test can say which prompts
 * the beam must keep:
 * | system prompt | answer | calculator reward |
 * |---|---|---|
 * | holds neither `ANSWER:` nor `check` | `The result is N.` | 0 (no answer line) |
 * | holds `ANSWER:` but not `check` | `ANSWER: N+1` | 0.1 (format only) |
 * | holds `ANSWER:` and `check` | `ANSWER: N` | 1 (correct) |
 * N is the question's answer, looked up in the inputs the policy is started with.
 */
import { type ChatServer, startChatServer, systemText } from "./chat-server.js";

/**
 * The answer the policy gives under a system prompt (see the module table).
 * @param systemPrompt - the request's system message ("" when none)
 * @param value - the question's correct answer
 */
export function policyAnswer(systemPrompt: string, value: number): string {
  if (!systemPrompt.includes("ANSWER:")) return `The result is ${value}.`;
  return systemPrompt.toLowerCase().includes("check") ? `ANSWER: ${value}` : `ANSWER: ${value + 1}`;
}

/**
 * Starts the policy server.
 * @param answers - question text -> correct answer, for every question the agents will ask
 * @returns the server; register `url` as the gateway's model endpoint. A question it does not know answers 400.
 */
export function startPromptSensitivePolicy(answers: ReadonlyMap<string, number>): Promise<ChatServer> {
  return startChatServer((request) => {
    const question = request.messages.find((m) => m.role === "user")?.content;
    const value = answers.get(String(question));
    if (value === undefined) return { status: 400, body: { error: { message: `unknown question ${question}` } } };
    return { content: policyAnswer(systemText(request), value) };
  });
}
