/**
 * @module Incremental detokenising of one generated sequence: the visible text (special tokens dropped, UTF-8 pieces
 * joined, stop strings cut) and the per-token strings of logprobs. Stream and non-stream answers use the same code,
 * so a streamed text always concatenates to the non-stream text.
 */
import type { ByteTokenizer } from "../embedded/tokenizer.js";

/**
 * Per-token strings for logprobs: a special token is its string; a byte is the characters it completes (the bytes of
 * a multi-byte character are joined onto the id that completes it, earlier pieces are `""`, as vLLM repairs
 * incomplete UTF-8 by joining neighbours). The strings of a sequence concatenate to its text with specials written.
 */
export class TokenStrings {
  private readonly decoder = new TextDecoder("utf-8");

  constructor(private readonly tokenizer: ByteTokenizer) {}

  /** @returns the string of the next id of the sequence */
  next(id: number): string {
    if (this.tokenizer.isSpecial(id)) return this.tokenizer.decode([id], false);
    return this.decoder.decode(Uint8Array.of(id), { stream: true });
  }
}

/**
 * The visible text of one generation, built token by token: special tokens are dropped, multi-byte characters appear
 * once complete, and the text ends just before the first stop string (the ids that formed it stay in `token_ids`, as
 * vLLM does). A suffix that could still grow into a stop string is held back until it cannot.
 */
export class TextAssembler {
  private readonly decoder = new TextDecoder("utf-8");
  private full = "";
  private sent = 0;
  private stopped = false;

  /**
   * @param tokenizer - the byte tokenizer
   * @param stop - stop strings; the text is cut before the earliest match
   * @param keepSpecialIds - special ids written as their strings instead of dropped (the tool parser keeps
   *   `<tool_call>` and `</tool_call>`)
   */
  constructor(
    private readonly tokenizer: ByteTokenizer,
    private readonly stop: readonly string[] = [],
    private readonly keepSpecialIds: readonly number[] = [],
  ) {}

  /** True once a stop string was seen; later ids add no text. */
  get stoppedByString(): boolean {
    return this.stopped;
  }

  /** @returns the text that became visible with this id (often `""`) */
  push(id: number): string {
    if (this.stopped) return "";
    if (!this.tokenizer.isSpecial(id)) this.full += this.decoder.decode(Uint8Array.of(id), { stream: true });
    else if (this.keepSpecialIds.includes(id)) this.full += this.decoder.decode() + this.tokenizer.decode([id], false);
    else return "";
    return this.release(false);
  }

  /** @returns the held-back rest at the end of the sequence (an incomplete UTF-8 tail becomes U+FFFD) */
  finish(): string {
    if (this.stopped) return "";
    this.full += this.decoder.decode();
    return this.release(true);
  }

  /** Emits what is safe: everything before a stop match, else all but a possible stop prefix (none at the end). */
  private release(atEnd: boolean): string {
    const match = this.earliestStop();
    let end: number;
    if (match >= 0) {
      this.stopped = true;
      end = match;
    } else {
      end = atEnd ? this.full.length : this.full.length - this.heldBack();
    }
    end = Math.max(end, this.sent);
    const delta = this.full.slice(this.sent, end);
    this.sent = end;
    return delta;
  }

  private earliestStop(): number {
    let best = -1;
    for (const s of this.stop) {
      if (s === "") continue;
      const at = this.full.indexOf(s, Math.max(0, this.sent - s.length));
      if (at >= 0 && (best < 0 || at < best)) best = at;
    }
    return best;
  }

  /** Length of the longest suffix of the text that is a proper prefix of a stop string. */
  private heldBack(): number {
    let longest = 0;
    for (const s of this.stop) {
      for (let k = Math.min(s.length - 1, this.full.length); k > longest; k--) {
        if (this.full.endsWith(s.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }
}

/**
 * The whole visible text of a finished generation (what {@link TextAssembler} streams, joined).
 * @param ids - generated ids, [respLen]
 * @param stop - stop strings
 * @param keepSpecialIds - special ids written as their strings
 */
export function visibleText(
  tokenizer: ByteTokenizer,
  ids: readonly number[],
  stop: readonly string[],
  keepSpecialIds: readonly number[] = [],
): string {
  const assembler = new TextAssembler(tokenizer, stop, keepSpecialIds);
  let text = "";
  for (const id of ids) text += assembler.push(id);
  return text + assembler.finish();
}
