/**
 * @module The teacher's codec for a Hugging Face policy (the torch engine's): its tokenizer.json and chat template
 * (Qwen2 style: tool results as `<tool_response>` blocks in a user turn, calls as `<tool_call>\n{…}\n</tool_call>`),
 * read from a tokenizer folder, so demonstrations recorded through the gateway carry the ids the torch policy's own
 * template gives each turn.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HfChatTemplate } from "../../src/engine/remote/hf-chat-template.js";
import { HfTokenizer } from "../../src/wire/hf-tokenizer.js";
import type { ChatMessage } from "./teacher.js";
import { promptTurns, type TeacherCodec, teacherMessages } from "./teacher-engine.js";

/** The text between `<tool_response>\n` and `\n</tool_response>` of a Qwen-style tool turn, or null. */
function toolResponse(text: string): string | null {
  const match = /^<tool_response>\n([\s\S]*)\n<\/tool_response>$/.exec(text);
  return match === null ? null : (match[1] as string);
}

/**
 * Builds the codec from a tokenizer folder (tokenizer.json + tokenizer_config.json with its chat template).
 * @param dir - e.g. `python/arclight_torch/assets/tokenizer`
 * @param vocabSize - the model's vocabulary (ids at or above it are refused)
 * @returns the codec
 * @throws {Error} when the files cannot be read or the config has no chat template
 */
export function hfCodec(dir: string, vocabSize: number): TeacherCodec {
  const files = {
    tokenizer: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")) as Record<string, unknown>,
    config: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")) as Record<string, unknown>,
  };
  const tokenizer = new HfTokenizer(files, vocabSize);
  const endId = tokenizer.eosId;
  return {
    tokenizer,
    chatTemplate: new HfChatTemplate(files, tokenizer, [endId]),
    endId,
    messages(ids): ChatMessage[] {
      // A tool result renders as a user turn wrapping it in <tool_response>: read it back as the tool turn it was.
      const turns = promptTurns(tokenizer.decode(ids, false)).map((turn) => {
        const result = turn.role === "user" ? toolResponse(turn.text) : null;
        return result === null ? turn : { role: "tool", text: result };
      });
      return teacherMessages(turns);
    },
    replyIds(reply) {
      // After the generation prompt `<|im_start|>assistant\n` the template writes the call block, then `<|im_end|>`.
      const text =
        "tool_calls" in reply
          ? reply.tool_calls
              .map(
                (call) =>
                  `<tool_call>\n{"name": "${call.function.name}", "arguments": ${call.function.arguments}}\n</tool_call>`,
              )
              .join("\n")
          : reply.content;
      return [...tokenizer.encodeWithSpecials(text), endId];
    },
  };
}
