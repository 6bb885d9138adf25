/**
 * @module Renders an agent's chat with the model's own chat template (Jinja, via @huggingface/jinja) to text, as
 * vLLM's chat endpoint does before tokenising: `developer` as `system`, text parts joined, tools and
 * `chat_template_kwargs` passed to the template.
 */
import type { TitoTokenizer } from "./tokenizer-folder.js";

type Json = Record<string, unknown>;

/** The chat fields that change a rendering: messages, tools and the template's extra variables. */
export interface ChatInput {
  /** The agent's `messages`, as sent. */
  messages: readonly Json[];
  /** The agent's `tools`, or undefined when it sent none (an empty list counts as none). */
  tools?: readonly Json[];
  /** The agent's `chat_template_kwargs` (e.g. `{enable_thinking: false}`), or undefined. */
  templateKwargs?: Json;
}

/**
 * The text of a message's `content`: a string as is, text parts joined, anything else (null, absent) "".
 * @param content - an OpenAI message `content`
 */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
}

/** A message as the template reads it. */
function templateMessage(message: Json): Json {
  const role = message.role === "developer" ? "system" : message.role;
  const content = message.content === null || message.content === undefined ? null : contentText(message.content);
  return { ...message, role, content };
}

/**
 * Renders messages with the model's template.
 * @param model - the model's tokenizer folder
 * @param chat - messages, tools, template kwargs
 * @param addGenerationPrompt - end with the opening of an assistant turn
 * @returns the rendered text (special tokens written as their strings)
 */
export function renderChat(model: TitoTokenizer, chat: ChatInput, addGenerationPrompt: boolean): string {
  return model.template.render({
    ...chat.templateKwargs,
    messages: chat.messages.map(templateMessage),
    ...(chat.tools && chat.tools.length > 0 ? { tools: chat.tools } : {}),
    add_generation_prompt: addGenerationPrompt,
    ...model.specials,
  });
}
