/** @module A Hugging Face tokenizer run locally with tokenizers.js, in the engine's `Tokenizer` shape. */
import { Tokenizer as JsTokenizer } from "@huggingface/tokenizers";
import { tokenText } from "./chat-template.js";

/** A model's tokenizer files: tokenizer.json and tokenizer_config.json, parsed. */
export interface TokenizerFiles {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** A Hugging Face tokenizer. */
export class HfTokenizer {
  /** Rows of the model's output layer (ids the model can produce; may exceed the tokenizer's own vocabulary). */
  readonly vocabSize: number;
  /** The tokenizer's EOS id (`eos_token` of tokenizer_config.json). */
  readonly eosId: number;
  private readonly inner: JsTokenizer;
  /** Added tokens by id: their string and whether they are special. */
  private readonly added: Map<number, { content: string; special: boolean }>;
  private readonly byteLevel: boolean;

  /** @throws {Error} when the config names no EOS token the vocabulary has */
  constructor(files: TokenizerFiles, vocabSize: number) {
    this.inner = new JsTokenizer(files.tokenizer, files.config);
    this.vocabSize = vocabSize;
    const addedList = (files.tokenizer.added_tokens ?? []) as { id: number; content: string; special: boolean }[];
    this.added = new Map(addedList.map((t) => [t.id, { content: t.content, special: t.special }]));
    this.byteLevel = JSON.stringify(files.tokenizer.decoder ?? {}).includes('"ByteLevel"');
    const eos = tokenText(files.config.eos_token);
    const eosId = eos === "" ? undefined : this.inner.token_to_id(eos);
    if (eosId === undefined) throw new Error(`tokenizer: eos_token ${JSON.stringify(eos)} is not in the vocabulary`);
    this.eosId = eosId;
  }

  /** Id of an added token's string (e.g. `<tool_call>`), or undefined when the vocabulary has none. */
  addedTokenId(content: string): number | undefined {
    for (const [id, token] of this.added) if (token.content === content) return id;
    return undefined;
  }

  /** Encodes as the model does, except an added token's string in `text` stays text (split after its first char). */
  encode(text: string): number[] {
    const ids: number[] = [];
    let rest = text;
    for (;;) {
      const hit = this.firstAddedToken(rest);
      if (!hit) break;
      const cut = hit.index + 1;
      ids.push(...this.rawEncode(rest.slice(0, cut)));
      rest = rest.slice(cut);
    }
    ids.push(...this.rawEncode(rest));
    return ids;
  }

  /** Encodes text with added tokens recognised (a rendered chat template, whose special strings are meant). */
  encodeWithSpecials(text: string): number[] {
    return this.rawEncode(text);
  }

  /**
   * @throws {RangeError} for an id outside the vocabulary
   */
  decode(ids: readonly number[], skipSpecial = true): string {
    for (const id of ids) this.checkId(id);
    return this.inner.decode([...ids], { skip_special_tokens: skipSpecial });
  }

  isSpecial(id: number): boolean {
    return this.added.get(id)?.special ?? false;
  }

  /** The bytes of one id (byte-level BPE through GPT-2's byte table, else UTF-8). @throws {RangeError} on a bad id */
  tokenBytes(id: number): number[] {
    this.checkId(id);
    const added = this.added.get(id);
    if (added) return [...Buffer.from(added.content, "utf8")];
    const piece = this.inner.id_to_token(id);
    if (piece === undefined) return [];
    if (this.byteLevel) return [...piece].map((ch) => UNICODE_TO_BYTE.get(ch) ?? 0x3f);
    return [...Buffer.from(this.inner.decode([id]), "utf8")];
  }

  private rawEncode(text: string): number[] {
    return text === "" ? [] : this.inner.encode(text, { add_special_tokens: false }).ids;
  }

  private firstAddedToken(text: string): { index: number } | null {
    let best: { index: number } | null = null;
    for (const { content } of this.added.values()) {
      const index = text.indexOf(content);
      if (index >= 0 && (best === null || index < best.index)) best = { index };
    }
    return best;
  }

  private checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize)
      throw new RangeError(`token id ${id} is outside the vocabulary [0, ${this.vocabSize})`);
  }
}

/** GPT-2's inverted byte ↔ unicode table. @see openai/gpt-2 `src/encoder.py` (`bytes_to_unicode`) */
const UNICODE_TO_BYTE: Map<string, number> = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table = new Map<string, number>();
  let next = 0;
  for (let b = 0; b < 256; b++) {
    table.set(String.fromCodePoint(printable(b) ? b : 256 + next), b);
    if (!printable(b)) next++;
  }
  return table;
})();
