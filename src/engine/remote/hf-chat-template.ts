/**
 * @module `HfChatTemplate`: a Hugging Face model's own chat template (the Jinja text in its tokenizer_config.json),
 * rendered to text by the shared Jinja template and encoded by the model's tokenizer, behind arclight's
 * `ChatTemplate` interface. Tool calls are Hermes/Qwen blocks between the `<tool_call>` and `</tool_call>` tokens.
 */
import type { ChatMessage } from "../../wire/chat.js";
import { JinjaChatTemplate } from "../../wire/chat-template.js";
import type { HfTokenizer, TokenizerFiles } from "../../wire/hf-tokenizer.js";
import type { ChatTemplate, RenderOptions, ToolCallDelimiters } from "../chat-template.js";

/** A model's chat template. */
export class HfChatTemplate implements ChatTemplate {
  /** Ids that end an assistant turn: the worker's EOS ids. */
  readonly stopTokenIds: readonly number[];
  /** The `<tool_call>` / `</tool_call>` ids (−1 when the vocabulary has none). */
  readonly toolCalls: ToolCallDelimiters;
  private readonly template: JinjaChatTemplate;

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
    this.template = new JinjaChatTemplate(source, files.config);
    this.stopTokenIds = stopTokenIds;
    // Models without tool-call tokens get ids no generated token has, so nothing parses as a call.
    this.toolCalls = {
      startId: tokenizer.addedTokenId("<tool_call>") ?? -1,
      endId: tokenizer.addedTokenId("</tool_call>") ?? -1,
    };
  }

  /** Renders the chat to text with the template and encodes it with the template's special strings recognised. */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): number[] {
    return this.tokenizer.encodeWithSpecials(this.renderText(messages, options));
  }

  /** The rendered text (what `render` encodes). */
  renderText(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    return this.template.render({ messages, tools: options.tools }, options.addGenerationPrompt ?? true);
  }
}
