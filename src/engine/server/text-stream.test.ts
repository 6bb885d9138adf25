import { describe, expect, it } from "vitest";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { TextAssembler, TokenStrings, visibleText } from "./text-stream.js";

const tok = new ByteTokenizer();

function pushAll(assembler: TextAssembler, ids: number[]): string[] {
  return [...ids.map((id) => assembler.push(id)), assembler.finish()];
}

describe("TextAssembler", () => {
  it("emits a multi-byte character once its last byte arrives and drops special tokens", () => {
    const ids = [...tok.encode("é"), tok.imEndId];
    expect(pushAll(new TextAssembler(tok), ids)).toEqual(["", "é", "", ""]);
  });

  it("holds back a possible stop-string prefix and releases it when the match fails", () => {
    const deltas = pushAll(new TextAssembler(tok, ["ab"]), tok.encode("xay"));
    expect(deltas).toEqual(["x", "", "ay", ""]);
  });

  it("cuts the text before the earliest stop string and ignores later ids", () => {
    const assembler = new TextAssembler(tok, ["cd", "b"]);
    expect(pushAll(assembler, tok.encode("abcd")).join("")).toBe("a");
    expect(assembler.stoppedByString).toBe(true);
  });

  it("releases a held-back prefix at the end of the sequence", () => {
    expect(visibleText(tok, tok.encode("xa"), ["ab"])).toBe("xa");
  });

  it("writes kept special ids as their strings", () => {
    const ids = [tok.toolCallStartId, ...tok.encode("{}"), tok.toolCallEndId, tok.imEndId];
    expect(visibleText(tok, ids, [], [tok.toolCallStartId, tok.toolCallEndId])).toBe("<tool_call>{}</tool_call>");
  });

  it("turns an incomplete UTF-8 tail into U+FFFD at the end", () => {
    expect(visibleText(tok, [0xc3], [])).toBe("\uFFFD");
  });
});

describe("TokenStrings", () => {
  it("joins the bytes of a character onto the id that completes it and writes specials", () => {
    const strings = new TokenStrings(tok);
    const out = [...tok.encode("a😀"), tok.imEndId].map((id) => strings.next(id));
    expect(out).toEqual(["a", "", "", "", "😀", "<|im_end|>"]);
  });

  it("gives an ASCII id its own character after an incomplete sequence, never a replacement character", () => {
    const strings = new TokenStrings(tok);
    expect([0xe4, 0xb8, 29, 119].map((id) => strings.next(id))).toEqual(["", "", "\u001d", "w"]);
  });

  it("drops a piece cut off by a new lead byte or a special token, and stray or invalid bytes", () => {
    const strings = new TokenStrings(tok);
    const ids = [0xf0, 0x9f, ...tok.encode("é"), 0xe4, tok.imEndId, 0x80, 0xff, 0xe0, 0x80, 0x80, 0x41];
    expect(ids.map((id) => strings.next(id))).toEqual(["", "", "", "é", "", "<|im_end|>", "", "", "", "", "", "A"]);
  });
});
