/** @module Byte tokenizer: ids 0–255 are UTF-8 bytes, 256+ specials that only the chat template emits. */
import type { Tokenizer } from "../tokenizer.js";

/** Special tokens, in id order starting at 256. */
export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"] as const;
/** One of the special token strings. */
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

/** Id of the first special token; every id below it is a byte. */
export const FIRST_SPECIAL_ID = 256;

/** Number of ids of the byte tokenizer (256 bytes + the special tokens): the `vocab` every embedded engine has. */
export const BYTE_VOCAB_SIZE = FIRST_SPECIAL_ID + SPECIAL_TOKENS.length;

/** Byte-level tokenizer; one id may be part of a UTF-8 character, so callers keep ids and never re-tokenise text. */
export class ByteTokenizer implements Tokenizer {
  /** Number of ids: 256 bytes + the special tokens. */
  readonly vocabSize = BYTE_VOCAB_SIZE;
  /** `<|endoftext|>`: end of a plain completion. */
  readonly eosId = this.specialId("<|endoftext|>");
  /** `<|im_start|>`: opens a chat turn. */
  readonly imStartId = this.specialId("<|im_start|>");
  /** `<|im_end|>`: closes a chat turn; the stop token of chat generation. */
  readonly imEndId = this.specialId("<|im_end|>");
  /** `<tool_call>` */
  readonly toolCallStartId = this.specialId("<tool_call>");
  /** `</tool_call>` */
  readonly toolCallEndId = this.specialId("</tool_call>");

  /** @throws {RangeError} for a string that is not a special token */
  specialId(token: SpecialToken): number {
    const index = SPECIAL_TOKENS.indexOf(token);
    if (index < 0) throw new RangeError(`${token} is not a special token`);
    return FIRST_SPECIAL_ID + index;
  }

  /** True when `id` is a special token id. */
  isSpecial(id: number): boolean {
    return id >= FIRST_SPECIAL_ID && id < this.vocabSize;
  }

  /** Encodes text as its UTF-8 bytes; special-token strings inside `text` stay plain bytes. */
  encode(text: string): number[] {
    return Array.from(Buffer.from(text, "utf8"));
  }

  /** Bytes are joined before UTF-8 decoding; an incomplete tail becomes U+FFFD. @throws {RangeError} on a bad id */
  decode(ids: readonly number[], skipSpecial = true): string {
    let out = "";
    let bytes: number[] = [];
    const flush = (): void => {
      if (bytes.length > 0) out += Buffer.from(bytes).toString("utf8");
      bytes = [];
    };
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize)
        throw new RangeError(`token id ${id} is out of range`);
      if (id < FIRST_SPECIAL_ID) {
        bytes.push(id);
        continue;
      }
      flush();
      if (!skipSpecial) out += SPECIAL_TOKENS[id - FIRST_SPECIAL_ID];
    }
    flush();
    return out;
  }

  /** The bytes of one id: the byte itself, or the UTF-8 of a special token's string (vLLM's logprob `bytes`). */
  tokenBytes(id: number): number[] {
    if (id < FIRST_SPECIAL_ID) return [id];
    return Array.from(Buffer.from(this.decode([id], false), "utf8"));
  }
}
