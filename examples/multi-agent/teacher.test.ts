import { describe, expect, it } from "vitest";
import { ChatMLTemplate } from "../../src/engine/embedded/chat-template.js";
import { ByteTokenizer } from "../../src/engine/embedded/tokenizer.js";
import { MultiAgentTeacherEngine, teacherAnswer } from "./teacher.js";

describe("multi-agent teacher", () => {
  it("writes the value of the writer's expression when it makes no mistakes", () => {
    expect(teacherAnswer("3+4=")).toBe("7");
  });

  it("writes a draft off by one when every question is one of its mistakes", () => {
    expect(teacherAnswer("3+4=", { writerMistakeShare: 1 })).toBe("8");
  });

  it("makes mistakes on about the share of questions it is given", () => {
    const questions = Array.from({ length: 100 }, (_, i) => `${Math.floor(i / 10)}+${i % 10}=`);
    const wrong = questions.filter((q) => teacherAnswer(q, { writerMistakeShare: 0.3 }) !== teacherAnswer(q)).length;
    expect(wrong).toBeGreaterThan(15);
    expect(wrong).toBeLessThan(45);
  });

  it("checks a right draft as ok and a wrong one as no", () => {
    expect(teacherAnswer("3+4=7 ok?")).toBe("ok");
    expect(teacherAnswer("3+4=8 ok?")).toBe("no");
    expect(teacherAnswer("3+4=seven ok?")).toBe("no");
  });

  it("rewrites to the value whatever the draft and the verdict", () => {
    expect(teacherAnswer("3+4=8 no so 3+4=", { writerMistakeShare: 1 })).toBe("7");
    expect(teacherAnswer("3+4=7 ok so 3+4=")).toBe("7");
  });

  it("answers nothing to a prompt that is none of the three roles'", () => {
    expect(teacherAnswer("hello")).toBe("");
  });

  it("generates the answer's byte ids then <|im_end|> for a ChatML prompt", async () => {
    const tokenizer = new ByteTokenizer();
    const promptTokenIds = new ChatMLTemplate(tokenizer).render([{ role: "user", content: "2+6=" }]);
    const sampling = { temperature: 0, topP: 1, topK: 0, maxTokens: 8, stopTokenIds: [], stop: [] };
    const [result] = await new MultiAgentTeacherEngine().generate([{ promptTokenIds, sampling }]);
    expect(result?.tokenIds).toEqual([...tokenizer.encode("8"), tokenizer.imEndId]);
  });
});
