/**
 * @module The `Tokenizer` interface an engine provides beside `Engine`: text ↔ token ids and the special ids. The
 * engine server encodes prompts and detokenises answers through it only; `embedded/tokenizer.ts` is the byte-level
 * implementation.
 */

/** Text ↔ token ids of one engine's vocabulary. */
export interface Tokenizer {
  /** Number of ids; every valid id is in [0, vocabSize). */
  readonly vocabSize: number;
  /** End of a plain completion: the default stop id of `/v1/completions`. */
  readonly eosId: number;
  /** Encodes text; special-token strings inside `text` stay plain text (a user cannot inject a special id). */
  encode(text: string): number[];
  /**
   * Decodes ids to text; pieces of one character split across ids come back whole.
   * @param skipSpecial - drop special tokens (true, the default) or write them as their strings
   * @throws {RangeError} for an id outside the vocabulary
   */
  decode(ids: readonly number[], skipSpecial?: boolean): string;
  /** True when `id` is a special token (dropped from visible text). */
  isSpecial(id: number): boolean;
  /** The UTF-8 bytes of one id (a special token: the bytes of its string), as vLLM's logprob `bytes`. */
  tokenBytes(id: number): number[];
}
