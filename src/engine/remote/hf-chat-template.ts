/**
 * @module `HfChatTemplate`: a Hugging Face model's own chat template (the Jinja text in its tokenizer_config.json or
 * chat_template.jinja), rendered with @huggingface/jinja and encoded by the model's tokenizer, behind arclight's
 * `ChatTemplate` interface. Tool calls are Hermes/Qwen blocks between the `<tool_call>` and `</tool_call>` tokens.
 */
import { Template } from "@huggingface/jinja";
import type { ChatMessage, ChatTemplate, RenderOptions, ToolCallDelimiters } from "../chat-template.js";
import type { HfTokenizer } from "./hf-tokenizer.js";
import type { TokenizerFiles } from "./protocol.js";

/** A model's chat template. */
export class HfChatTemplate implements ChatTemplate {
  /** Ids that end an assistant turn: the worker's EOS ids. */
  readonly stopTokenIds: readonly number[];
  /** The `<tool_call>` / `</tool_call>` ids (−1 when the vocabulary has none). */
  readonly toolCalls: ToolCallDelimiters;
  private readonly template: Template;
  private readonly specials: Record<string, string>;

  /**
   * @param files - the worker's tokenizer files (the config carries `chat_template`)
   * @param tokenizer - the same model's tokenizer
   * @param stopTokenIds - ids that end an assistant turn (the worker's EOS ids)
   * @throws {Error} when the tokenizer config has no chat template
   */
  constructor(
    files: TokenizerFiles,
    private readonly tokenizer: HfTokenizer,
    stopTokenIds: readonly number[],
  ) {
    const source = files.config.chat_template;
    if (typeof source !== "string" || source === "")
      throw new Error("tokenizer_config.json has no chat_template: the torch engine serves chats with the model's own");
    this.template = new Template(source);
    this.specials = Object.fromEntries(
      ["bos_token", "eos_token", "pad_token"].map((key) => [key, tokenText(files.config[key])]),
    );
    this.stopTokenIds = stopTokenIds;
    // Models without tool-call tokens get ids no generated token has, so nothing parses as a call.
    this.toolCalls = {
      startId: tokenizer.addedTokenId("<tool_call>") ?? -1,
      endId: tokenizer.addedTokenId("</tool_call>") ?? -1,
    };
  }

  /**
   * Renders the chat to text with the template (messages' content parts joined, `developer` as `system`) and
   * encodes it with the template's special strings recognised.
   */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): number[] {
    return this.tokenizer.encodeWithSpecials(this.renderText(messages, options));
  }

  /** The rendered text (what `render` encodes). */
  renderText(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    const plain = messages.map((m) => ({
      ...m,
      role: m.role === "developer" ? "system" : m.role,
      content:
        typeof m.content === "string" || m.content === null ? m.content : m.content.map((p) => p.text ?? "").join(""),
    }));
    return this.template.render({
      messages: plain,
      ...(options.tools && options.tools.length > 0 ? { tools: options.tools } : {}),
      add_generation_prompt: options.addGenerationPrompt ?? true,
      ...this.specials,
    });
  }
}

function tokenText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && "content" in value) return String((value as { content: unknown }).content);
  return "";
}
