/** @module Chat messages as the OpenAI chat API sends them, and the text of a message's content. */

/** One tool call of an assistant message (OpenAI wire shape). */
export interface ChatToolCall {
  id?: string;
  type?: "function";
  function: {
    name: string;
    /** JSON text of the arguments, rendered verbatim. */
    arguments: string;
  };
}

/** One message of a chat (OpenAI wire shape, the fields a template reads). */
export interface ChatMessage {
  /** `developer` is OpenAI's newer name for the system role and renders exactly as `system`. */
  role: "system" | "developer" | "user" | "assistant" | "tool";
  /** Text, or text parts (`[{type: "text", text}]`, joined), or null (an assistant turn with only tool calls). */
  content: string | null | { type: string; text?: string }[];
  tool_calls?: ChatToolCall[];
}

/** One tool the model may call (OpenAI `tools[i]` wire shape). */
export interface ChatTool {
  type?: "function";
  function: { name: string; description?: string; parameters?: unknown };
}

type Json = Record<string, unknown>;

/** The chat fields that change a rendering, as a request sent them: messages, tools, the template's variables. */
export interface ChatInput {
  /** The messages, as sent. */
  messages: readonly Json[];
  /** The tools, or undefined when none were sent (an empty list counts as none). */
  tools?: readonly Json[];
  /** `chat_template_kwargs` (e.g. `{enable_thinking: false}`), or undefined. */
  templateKwargs?: Json;
}

/** {@link ChatInput}, or the same chat in the typed message shapes. */
export type TemplateInput =
  | ChatInput
  | { messages: readonly ChatMessage[]; tools?: readonly ChatTool[]; templateKwargs?: Json };

/** A `content` string as is, text parts joined, anything else "". */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
}

/** A message as a chat template reads it: `developer` as `system`, content parts joined, no content as null. */
export function templateMessage(message: Json | ChatMessage): Json {
  const role = message.role === "developer" ? "system" : message.role;
  const content = message.content === null || message.content === undefined ? null : contentText(message.content);
  return { ...message, role, content };
}
