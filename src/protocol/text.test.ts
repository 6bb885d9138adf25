import { describe, expect, it } from "vitest";
import { EventCreateSchema } from "./event.js";
import { ModelSchema } from "./model.js";
import { RolloutPatchSchema } from "./rollout.js";
import { isWellFormedText, quoteStart } from "./text.js";

describe("well-formed text", () => {
  it("tells lone surrogates from pairs, anywhere in the string", () => {
    expect(isWellFormedText("ü🚀 中文 “quoted”")).toBe(true);
    expect(isWellFormedText("ü🚀\ud800")).toBe(false);
    expect(isWellFormedText("\udc00x")).toBe(false);
    expect(isWellFormedText("a\ud83d")).toBe(false);
    expect(isWellFormedText("")).toBe(true);
  });

  it("is required of event types and ids, patch status strings and model names, not of event data", () => {
    const bad = "ü🚀\ud800";
    expect(EventCreateSchema.safeParse({ event_type: bad }).success).toBe(false);
    expect(EventCreateSchema.safeParse({ event_type: "log", event_id: bad }).success).toBe(false);
    expect(EventCreateSchema.safeParse({ event_type: "log", data: { text: bad } }).success).toBe(true);
    expect(RolloutPatchSchema.safeParse({ status: { k8s_job_name: bad } }).success).toBe(false);
    expect(RolloutPatchSchema.safeParse({ status: { error_message: bad } }).success).toBe(false);
    expect(ModelSchema.safeParse({ model: bad, endpoint: "http://h/v1" }).success).toBe(false);
    expect(EventCreateSchema.safeParse({ event_type: "ü🚀" }).success).toBe(true);
  });
});

describe("quoteStart", () => {
  it("keeps text of up to max characters, and quotes a longer one by its start and length", () => {
    expect(quoteStart("abc", 3)).toBe("abc");
    expect(quoteStart("abcd", 3)).toBe("abc… (4 characters)");
  });
});
