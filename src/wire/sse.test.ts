import { describe, expect, it } from "vitest";
import { SseParser } from "./sse.js";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("SseParser", () => {
  it("returns each event's data once its blank line arrives", () => {
    const parser = new SseParser();
    expect(parser.feed(bytes('data: {"a":1}\n'))).toEqual([]);
    expect(parser.feed(bytes('\ndata: {"b":2}\n\ndata: [DONE]\n\n'))).toEqual(['{"a":1}', '{"b":2}', "[DONE]"]);
    expect(parser.hasPartialEvent).toBe(false);
  });

  it("decodes an emoji split across network chunks", () => {
    const all = bytes('data: {"c":"😀東"}\n\n');
    const parser = new SseParser();
    const out = [];
    for (let i = 0; i < all.length; i++) out.push(...parser.feed(all.subarray(i, i + 1)));
    expect(out).toEqual(['{"c":"😀東"}']);
  });

  it("handles CRLF line endings, even when CR and LF land in different chunks", () => {
    const parser = new SseParser();
    expect(parser.feed(bytes("data: x\r\n\r"))).toEqual([]);
    expect(parser.feed(bytes("\ndata: y\r\n\r\n"))).toEqual(["x", "y"]);
  });

  it("joins multi-line data, ignores comments and other fields", () => {
    const parser = new SseParser();
    expect(parser.feed(bytes(": ping\n\nevent: m\nid: 3\ndata: one\ndata: two\n\n"))).toEqual(["one\ntwo"]);
  });

  it("reports an unfinished event at the end and parses a last event lacking its blank line", () => {
    const parser = new SseParser();
    parser.feed(bytes('data: {"trunc'));
    expect(parser.hasPartialEvent).toBe(true);
    expect(parser.end()).toEqual(['{"trunc']);
  });

  it("assembles a 100k-id event delivered in 1 KiB pieces", () => {
    const ids = Array.from({ length: 100_000 }, (_, i) => i);
    const all = bytes(`data: ${JSON.stringify({ prompt_token_ids: ids })}\n\n`);
    const parser = new SseParser();
    const out: string[] = [];
    for (let i = 0; i < all.length; i += 1024) out.push(...parser.feed(all.subarray(i, i + 1024)));
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!).prompt_token_ids).toEqual(ids);
  });
});
