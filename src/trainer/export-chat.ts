/**
 * @module A recorded rollout as one line of OpenAI's chat fine-tuning format: the last successful Chat Completions
 * call's request messages and tools, followed by the assistant message it received. The schema of that line is here
 * too, so an export is checked before it is written.
 * @see https://platform.openai.com/docs/guides/fine-tuning (chat format; function calling with `tools`)
 */
import { z } from "zod";
import type { Event } from "../protocol/index.js";

const ToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal("function"),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

/** Content of a message: a string, or content parts (text parts survive as is). */
const ContentSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);

/** One message of a chat fine-tuning example. */
export const ChatMessageSchema = z.discriminatedUnion("role", [
  z.looseObject({ role: z.enum(["system", "developer"]), content: ContentSchema }),
  z.looseObject({ role: z.literal("user"), content: ContentSchema }),
  z
    .looseObject({
      role: z.literal("assistant"),
      content: ContentSchema.nullable().optional(),
      tool_calls: z.array(ToolCallSchema).optional(),
      weight: z.union([z.literal(0), z.literal(1)]).optional(),
    })
    .refine((m) => (m.content !== undefined && m.content !== null) || (m.tool_calls?.length ?? 0) > 0, {
      message: "an assistant message needs content or tool_calls",
    }),
  z.looseObject({ role: z.literal("tool"), tool_call_id: z.string(), content: ContentSchema }),
]);

/** One line of a chat fine-tuning file: messages ending with an assistant message, and the tools offered. */
export const ChatExampleSchema = z.strictObject({
  messages: z
    .array(ChatMessageSchema)
    .min(2)
    .refine((messages) => messages.at(-1)?.role === "assistant", {
      message: "the last message must be the assistant's",
    }),
  tools: z
    .array(
      z.looseObject({
        type: z.literal("function"),
        function: z.looseObject({ name: z.string().min(1), parameters: z.unknown().optional() }),
      }),
    )
    .optional(),
});
/** One line of a chat fine-tuning file. */
export type ChatExample = z.infer<typeof ChatExampleSchema>;

/** The fields of a Chat Completions request and response this module reads. */
interface ChatCall {
  request: { messages?: unknown; tools?: unknown };
  response: { choices?: { message?: Record<string, unknown> }[] };
}

/** True for a `model_request` event of a successful Chat Completions call (a request with `messages`). */
function isChatCall(event: Event): boolean {
  if (event.event_type !== "model_request") return false;
  const data = event.data as { status?: unknown; request?: { messages?: unknown } };
  return data.status === "ok" && Array.isArray(data.request?.messages);
}

/** The assistant message of a response, keeping only the fields of the fine-tuning format. */
function assistantMessage(message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { role: "assistant", content: message.content ?? null };
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) out.tool_calls = message.tool_calls;
  return out;
}

/**
 * The chat fine-tuning example of a rollout: the last successful Chat Completions call of its latest attempt (whose
 * messages hold the conversation so far when the agent keeps its history) plus the assistant message it received.
 * @param events - the rollout's events (`GET /api/rollouts/{id}/events`), any order
 * @returns the example, or null when the rollout has no successful Chat Completions call or the line would not
 *   validate (e.g. an empty answer)
 */
export function chatExampleOf(events: readonly Event[]): ChatExample | null {
  const calls = events.filter(isChatCall).sort((a, b) => a.sequence - b.sequence);
  const last = calls.at(-1);
  if (last === undefined) return null;
  const { request, response } = last.data as unknown as ChatCall;
  const message = response.choices?.[0]?.message;
  if (message === undefined) return null;
  const line = {
    messages: [...(request.messages as unknown[]), assistantMessage(message)],
    ...(Array.isArray(request.tools) && request.tools.length > 0 ? { tools: request.tools } : {}),
  };
  const parsed = ChatExampleSchema.safeParse(line);
  return parsed.success ? parsed.data : null;
}
