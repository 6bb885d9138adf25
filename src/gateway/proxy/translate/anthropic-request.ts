/**
 * @module Anthropic Messages API request → chat completions request. `system` becomes the first system message;
 * `tool_result` blocks become `tool` messages (before the user's text of that turn); `tool_use` blocks become
 * assistant `tool_calls` whose `arguments` are Python-`json.dumps` text of `input`, the text vLLM's hermes parser
 * produced, so the next prompt renders the same tokens as for a chat client. Worked example:
 * `{system: "S", messages: [{role: "user", content: "Hi"}, {role: "assistant", content: [{type: "tool_use", id: "t1",
 * name: "f", input: {a: 1}}]}, {role: "user", content: [{type: "tool_result", tool_use_id: "t1", content: "2"}]}]}` →
 * `messages: [{role: "system", content: "S"}, {role: "user", content: "Hi"}, {role: "assistant", content: null,
 * tool_calls: [{id: "t1", type: "function", function: {name: "f", arguments: "{\"a\": 1}"}}]}, {role: "tool",
 * tool_call_id: "t1", content: "2"}]`.
 * @see https://docs.anthropic.com/en/api/messages
 */
import { BadRequest } from "../../../protocol/index.js";
import { pythonJsonDumps } from "../../../wire/python-json.js";
import { isJson, type Json } from "./translation.js";

function blocksOf(content: unknown, where: string): Json[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw new BadRequest(`${where}: content must be a string or a list of blocks`);
  return content.map((block, i) => {
    if (!isJson(block)) throw new BadRequest(`${where}.content[${i}] must be an object`);
    return block;
  });
}

function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (content === undefined || content === null) return "";
  return blocksOf(content, where)
    .map((block) => {
      if (block.type === "text") return String(block.text ?? "");
      throw new BadRequest(`${where}: block type ${String(block.type)} is not supported in tool results by the proxy`);
    })
    .join("");
}

/** Chat content of user blocks: one text block becomes a plain string (what chat clients send). */
function userContent(blocks: Json[], where: string): unknown {
  const parts = blocks.map((block) => {
    if (block.type === "text") return { type: "text", text: String(block.text ?? "") };
    const source = isJson(block.source) ? block.source : {};
    if (block.type === "image" && source.type === "base64") {
      return {
        type: "image_url",
        image_url: { url: `data:${String(source.media_type)};base64,${String(source.data)}` },
      };
    }
    if (block.type === "image" && source.type === "url") return { type: "image_url", image_url: { url: source.url } };
    throw new BadRequest(`${where}: block type ${String(block.type)} is not supported by the proxy`);
  });
  if (parts.length === 1 && parts[0]!.type === "text") return (parts[0] as { text: string }).text;
  return parts;
}

function pushUser(messages: Json[], content: unknown, where: string): void {
  const blocks = blocksOf(content, where);
  const rest: Json[] = [];
  for (const block of blocks) {
    if (block.type !== "tool_result") {
      rest.push(block);
      continue;
    }
    if (typeof block.tool_use_id !== "string") throw new BadRequest(`${where}: tool_result needs a tool_use_id`);
    messages.push({ role: "tool", tool_call_id: block.tool_use_id, content: textOf(block.content, where) });
  }
  if (rest.length > 0) messages.push({ role: "user", content: userContent(rest, where) });
}

function pushAssistant(messages: Json[], content: unknown, where: string): void {
  let text: string | null = null;
  const toolCalls: Json[] = [];
  for (const block of blocksOf(content, where)) {
    if (block.type === "text") text = (text ?? "") + String(block.text ?? "");
    else if (block.type === "tool_use") {
      if (typeof block.id !== "string" || typeof block.name !== "string") {
        throw new BadRequest(`${where}: tool_use needs string id and name`);
      }
      const args = pythonJsonDumps(block.input ?? {});
      toolCalls.push({ id: block.id, type: "function", function: { name: block.name, arguments: args } });
    } else if (block.type !== "thinking" && block.type !== "redacted_thinking") {
      throw new BadRequest(`${where}: block type ${String(block.type)} is not supported by the proxy`);
    }
  }
  if (toolCalls.length === 0) messages.push({ role: "assistant", content: text ?? "" });
  else messages.push({ role: "assistant", content: text === "" ? null : text, tool_calls: toolCalls });
}

function chatTool(tool: unknown, i: number): Json {
  const custom = isJson(tool) && (tool.type === undefined || tool.type === null || tool.type === "custom");
  if (!custom || typeof tool.name !== "string") {
    const type = isJson(tool) ? String(tool.type) : typeof tool;
    throw new BadRequest(
      `tools[${i}]: only client tools (name, input_schema) are supported by the proxy (got ${type})`,
    );
  }
  const fn: Json = { name: tool.name };
  if (typeof tool.description === "string") fn.description = tool.description;
  fn.parameters = tool.input_schema ?? { type: "object", properties: {} };
  return { type: "function", function: fn };
}

function toolChoice(choice: Json, chat: Json): void {
  if (choice.type === "auto") chat.tool_choice = "auto";
  else if (choice.type === "any") chat.tool_choice = "required";
  else if (choice.type === "none") chat.tool_choice = "none";
  else if (choice.type === "tool" && typeof choice.name === "string") {
    chat.tool_choice = { type: "function", function: { name: choice.name } };
  } else throw new BadRequest(`tool_choice ${JSON.stringify(choice)} is not supported by the proxy`);
  if (choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
}

/**
 * Builds the chat completions body of an Anthropic Messages request.
 * @param body - the agent's `POST /v1/messages` body; not mutated
 * @returns the chat body: `model`, `messages`, tools, `max_tokens`, `stop`, sampling fields, `stream`
 * @throws {BadRequest} malformed messages, server tools, documents and other unsupported blocks (400)
 */
export function anthropicToChat(body: Json): Json {
  if (!Array.isArray(body.messages)) throw new BadRequest("Messages request needs `messages`: a list");
  const messages: Json[] = [];
  if (body.system !== undefined && body.system !== null) {
    const system = typeof body.system === "string" ? body.system : textOf(body.system, "system");
    if (system !== "") messages.push({ role: "system", content: system });
  }
  body.messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isJson(message)) throw new BadRequest(`${where} must be an object`);
    if (message.role === "user") pushUser(messages, message.content, where);
    else if (message.role === "assistant") pushAssistant(messages, message.content, where);
    else throw new BadRequest(`${where}: role must be user or assistant`);
  });
  const chat: Json = { model: body.model, messages };
  if (Array.isArray(body.tools) && body.tools.length > 0) chat.tools = body.tools.map(chatTool);
  if (isJson(body.tool_choice)) toolChoice(body.tool_choice, chat);
  if (typeof body.max_tokens === "number") chat.max_tokens = body.max_tokens;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  if (typeof body.top_p === "number") chat.top_p = body.top_p;
  if (typeof body.top_k === "number") chat.top_k = body.top_k;
  if (body.stream === true) chat.stream = true;
  return chat;
}
