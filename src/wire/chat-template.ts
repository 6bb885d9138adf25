/** @module A Hugging Face model's own Jinja chat template, rendered to text as vLLM's chat endpoint does. */
import { Template } from "@huggingface/jinja";
import { type TemplateInput, templateMessage } from "./chat.js";

/** A token in tokenizer_config.json: a string or an AddedToken object with `content`; "" when absent. */
export function tokenText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && "content" in value) return String((value as { content: unknown }).content);
  return "";
}

/** A compiled chat template with the special-token strings its config names. */
export class JinjaChatTemplate {
  private readonly template: Template;
  /** `bos_token`, `eos_token`, `pad_token` strings, passed to the template as variables. */
  readonly specials: Readonly<Record<"bos_token" | "eos_token" | "pad_token", string>>;

  /** @throws {Error} when the template does not compile */
  constructor(source: string, config: Record<string, unknown>) {
    this.template = new Template(source);
    this.specials = {
      bos_token: tokenText(config.bos_token),
      eos_token: tokenText(config.eos_token),
      pad_token: tokenText(config.pad_token),
    };
  }

  /** Renders a chat (`developer` as `system`, content parts joined), special tokens as their strings. */
  render(chat: TemplateInput, addGenerationPrompt: boolean): string {
    return this.template.render({
      ...chat.templateKwargs,
      messages: chat.messages.map((message: TemplateInput["messages"][number]) => templateMessage(message)),
      ...(chat.tools && chat.tools.length > 0 ? { tools: chat.tools } : {}),
      add_generation_prompt: addGenerationPrompt,
      ...this.specials,
    });
  }
}
