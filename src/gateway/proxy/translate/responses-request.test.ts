import { describe, expect, it } from "vitest";
import { BadRequest, NotFound } from "../../../protocol/index.js";
import { ResponseHistory } from "./response-history.js";
import { responsesToChat } from "./responses-request.js";

const call = { id: "call_1", type: "function", function: { name: "f", arguments: '{"a": 1}' } };

describe("responsesToChat", () => {
  it("joins an assistant message and the function calls after it into one chat turn", () => {
    const { chat } = responsesToChat(
      {
        model: "m",
        input: [
          { role: "developer", content: [{ type: "input_text", text: "rules" }] },
          {
            type: "message",
            role: "user",
            content: [
              { type: "input_text", text: "a" },
              { type: "input_text", text: "b" },
            ],
          },
          { type: "message", role: "assistant", id: "msg_1", content: [{ type: "output_text", text: "thinking" }] },
          { type: "function_call", id: "fc_1", call_id: "call_1", name: "f", arguments: '{"a": 1}' },
          { type: "reasoning", id: "rs_1", summary: [] },
          { type: "function_call_output", call_id: "call_1", output: [{ type: "input_text", text: "42" }] },
        ],
        max_output_tokens: 64,
        stream: true,
      },
      "r",
      new ResponseHistory(),
    );
    expect(chat).toEqual({
      model: "m",
      messages: [
        { role: "system", content: "rules" },
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
        { role: "assistant", content: "thinking", tool_calls: [call] },
        { role: "tool", tool_call_id: "call_1", content: "42" },
      ],
      max_tokens: 64,
      stream: true,
    });
  });

  it("expands item_reference from this rollout's stored responses only", () => {
    const history = new ResponseHistory();
    const items = new Map([["fc_9", { role: "assistant", content: null, tool_calls: [call] }]]);
    history.put("resp_1", { rolloutId: "r", conversation: [], items });
    const input = [{ type: "item_reference", id: "fc_9" }];
    const { chat } = responsesToChat({ model: "m", input }, "r", history);
    expect(chat.messages).toEqual([{ role: "assistant", content: null, tool_calls: [call] }]);
    expect(() => responsesToChat({ model: "m", input }, "other", history)).toThrow(NotFound);
  });

  it("maps tool_choice and text.format, and refuses hosted tools and unknown items with 400", () => {
    const { chat } = responsesToChat(
      {
        model: "m",
        input: "x",
        tool_choice: { type: "function", name: "f" },
        text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
      },
      "r",
      new ResponseHistory(),
    );
    expect(chat.tool_choice).toEqual({ type: "function", function: { name: "f" } });
    expect(chat.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "out", schema: { type: "object" }, strict: true },
    });
    const history = new ResponseHistory();
    expect(() => responsesToChat({ model: "m", input: "x", tools: [{ type: "web_search" }] }, "r", history)).toThrow(
      BadRequest,
    );
    expect(() => responsesToChat({ model: "m", input: [{ type: "computer_call" }] }, "r", history)).toThrow(BadRequest);
    expect(() => responsesToChat({ model: "m" }, "r", history)).toThrow(BadRequest);
  });

  it("evicts the oldest responses past the bound", () => {
    const history = new ResponseHistory(2);
    for (const id of ["a", "b", "c"])
      history.put(id, { rolloutId: "r", conversation: [], items: new Map([[`i${id}`, {}]]) });
    expect(history.size).toBe(2);
    expect(history.response("r", "a")).toBeUndefined();
    expect(history.item("r", "ia")).toBeUndefined();
    expect(history.item("r", "ic")).toEqual({});
  });
});
