/**
 * @module Incremental detokenising of one generated sequence: the visible text (special tokens dropped, UTF-8 pieces
 * joined, stop strings cut) and the per-token strings of logprobs. Stream and non-stream answers use the same code,
 * so a streamed text always concatenates to the non-stream text.
 */
import type { Tokenizer } from "../tokenizer.js";

/** Bytes of the UTF-8 character a lead byte starts (2-4); 0 for a continuation or a byte UTF-8 never uses. */
function utf8Length(byte: number): number {
  if (byte >= 0xc2 && byte <= 0xdf) return 2;
  if (byte >= 0xe0 && byte <= 0xef) return 3;
  if (byte >= 0xf0 && byte <= 0xf4) return 4;
  return 0;
}

/**
 * Per-token strings for logprobs, one per id, each from that id's own bytes: a special token is its string; an ASCII
 * byte is its character; the bytes of a multi-byte character are joined onto the id that completes it and the
 * earlier pieces are `""` (vLLM repairs an incomplete UTF-8 piece by joining neighbours, or makes it `""`). A piece
 * that never completes (cut off by an ASCII byte, a special token or a new lead byte), a stray continuation byte and
 * an invalid sequence are `""`: no id ever carries a replacement character made from other ids' bytes.
 * @see https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/v1/engine/logprobs.py (`_verify_tokens`)
 * @example bytes of "a😀b" → ["a", "", "", "", "😀", "b"]; bytes F0 9F then "w" → ["", "", "w"]
 */
export class TokenStrings {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  /** Bytes of the character being assembled, lead byte first. */
  private pending: number[] = [];

  /** @param tokenizer - writes special tokens as their strings */
  constructor(private readonly tokenizer: Tokenizer) {}

  /**
   * @param id - the next id of the sequence
   * @returns its string (often `""` for a byte inside a multi-byte character)
   */
  next(id: number): string {
    if (this.tokenizer.isSpecial(id)) {
      this.pending = [];
      return this.tokenizer.decode([id], false);
    }
    // A byte tokenizer's id is one byte; a subword id's bytes go through one by one, joined.
    return this.tokenizer
      .tokenBytes(id)
      .map((byte) => this.nextByte(byte))
      .join("");
  }

  /** The string one byte completes (see the class doc). */
  private nextByte(byte: number): string {
    if (byte < 0x80) {
      this.pending = [];
      return String.fromCharCode(byte);
    }
    if (utf8Length(byte) > 0) {
      this.pending = [byte];
      return "";
    }
    // A continuation byte (0x80-0xBF) or a byte UTF-8 never uses (0xC0, 0xC1, 0xF5-0xFF).
    if (this.pending.length === 0 || byte > 0xbf) {
      this.pending = [];
      return "";
    }
    this.pending.push(byte);
    if (this.pending.length < utf8Length(this.pending[0]!)) return "";
    const bytes = Uint8Array.from(this.pending);
    this.pending = [];
    try {
      return this.decoder.decode(bytes);
    } catch {
      return ""; // overlong or surrogate encodings, e.g. E0 80 80
    }
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
   * @param tokenizer - the engine's tokenizer (each id's bytes are decoded as one UTF-8 stream)
   * @param stop - stop strings; the text is cut before the earliest match
   * @param keepSpecialIds - special ids written as their strings instead of dropped (the tool parser keeps
   *   `<tool_call>` and `</tool_call>`)
   */
  constructor(
    private readonly tokenizer: Tokenizer,
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
    if (!this.tokenizer.isSpecial(id))
      this.full += this.decoder.decode(Uint8Array.from(this.tokenizer.tokenBytes(id)), { stream: true });
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
  tokenizer: Tokenizer,
  ids: readonly number[],
  stop: readonly string[],
  keepSpecialIds: readonly number[] = [],
): string {
  const assembler = new TextAssembler(tokenizer, stop, keepSpecialIds);
  let text = "";
  for (const id of ids) text += assembler.push(id);
  return text + assembler.finish();
}
