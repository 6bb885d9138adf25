/**
 * @module OpenAI Responses API request → chat completions request. `instructions` become the first system message,
 * `previous_response_id` and `item_reference` items are expanded from the responses the gateway served to this
 * rollout, `function_call` / `function_call_output` items become assistant `tool_calls` and `tool` messages, and
 * function tools are rewrapped. Worked example:
 * `{instructions: "Be brief", input: [{role: "user", content: [{type: "input_text", text: "Hi"}]},
 * {type: "function_call", call_id: "c1", name: "f", arguments: "{}"}, {type: "function_call_output", call_id: "c1",
 * output: "42"}]}` → `messages: [{role: "system", content: "Be brief"}, {role: "user", content: "Hi"},
 * {role: "assistant", content: null, tool_calls: [{id: "c1", type: "function", function: {name: "f", arguments:
 * "{}"}}]}, {role: "tool", tool_call_id: "c1", content: "42"}]`.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */
import { BadRequest, NotFound } from "../../../protocol/index.js";
import type { ResponseHistory } from "./response-history.js";
import { isJson, type Json } from "./translation.js";

/** A Responses request turned into chat messages, plus what the answer needs to be stored. */
export interface ResponsesChatRequest {
  /** The chat completions body. */
  chat: Json;
  /** The conversation before this call's answer, `instructions` excluded (stored with the answer). */
  conversation: Json[];
}

function textOfParts(parts: unknown[], where: string): string {
  return parts
    .map((part) => {
      if (isJson(part) && typeof part.text === "string") return part.text;
      if (isJson(part) && typeof part.refusal === "string") return part.refusal;
      throw new BadRequest(`${where}: unsupported content part ${JSON.stringify(part).slice(0, 100)}`);
    })
    .join("");
}

/** User/system content: one text part becomes a plain string (what chat clients send); images become image_url. */
function inputContent(content: unknown, where: string): unknown {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new BadRequest(`${where}: content must be a string or a list of parts`);
  const parts = content.map((part) => {
    if (!isJson(part)) throw new BadRequest(`${where}: content part must be an object`);
    if (part.type === "input_text" || part.type === "output_text" || part.type === "text") {
      return { type: "text", text: String(part.text ?? "") };
    }
    if (part.type === "input_image" && typeof part.image_url === "string") {
      const image: Json = { url: part.image_url };
      if (part.detail !== undefined) image.detail = part.detail;
      return { type: "image_url", image_url: image };
    }
    throw new BadRequest(`${where}: content part type ${String(part.type)} is not supported by the proxy`);
  });
  if (parts.length === 1 && parts[0]!.type === "text") return (parts[0] as { text: string }).text;
  return parts;
}

function messageOf(item: Json, where: string): Json {
  const role = item.role;
  if (role === "assistant") {
    const content = typeof item.content === "string" ? item.content : textOfParts(asList(item.content, where), where);
    return { role: "assistant", content };
  }
  if (role === "user" || role === "system" || role === "developer") {
    // vLLM's chat templates know system/user/assistant/tool; OpenAI's "developer" is the system role of new models.
    return { role: role === "developer" ? "system" : role, content: inputContent(item.content, where) };
  }
  throw new BadRequest(`${where}: unknown message role ${String(role)}`);
}

function asList(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new BadRequest(`${where}: content must be a string or a list of parts`);
  return value;
}

/** Appends an assistant tool call, joining the assistant message just before it (one chat turn, as vLLM answered). */
function pushToolCall(messages: Json[], call: Json): void {
  const last = messages[messages.length - 1];
  if (last?.role === "assistant") {
    const calls = Array.isArray(last.tool_calls) ? last.tool_calls : [];
    messages[messages.length - 1] = {
      ...last,
      content: last.content === "" ? null : last.content,
      tool_calls: [...calls, call],
    };
    return;
  }
  messages.push({ role: "assistant", content: null, tool_calls: [call] });
}

function outputText(output: unknown, where: string): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return textOfParts(output, where);
  throw new BadRequest(`${where}: output must be a string or a list of parts`);
}

/** Appends one input item's chat message(s). */
function pushItem(messages: Json[], item: unknown, where: string, rolloutId: string, history: ResponseHistory): void {
  if (!isJson(item)) throw new BadRequest(`${where} must be an object`);
  const type = item.type ?? "message";
  if (type === "message") {
    messages.push(messageOf(item, where));
  } else if (type === "function_call") {
    if (typeof item.call_id !== "string" || typeof item.name !== "string") {
      throw new BadRequest(`${where}: function_call needs string call_id and name`);
    }
    const args = typeof item.arguments === "string" ? item.arguments : JSON.stringify(item.arguments ?? {});
    pushToolCall(messages, { id: item.call_id, type: "function", function: { name: item.name, arguments: args } });
  } else if (type === "function_call_output") {
    if (typeof item.call_id !== "string") throw new BadRequest(`${where}: function_call_output needs a call_id`);
    messages.push({ role: "tool", tool_call_id: item.call_id, content: outputText(item.output, where) });
  } else if (type === "item_reference") {
    const found = typeof item.id === "string" ? history.item(rolloutId, item.id) : undefined;
    if (!found) throw new NotFound(`${where}: item ${String(item.id)} not found among this rollout's responses`);
    if (Array.isArray(found.tool_calls) && found.content === null) {
      for (const call of found.tool_calls as Json[]) pushToolCall(messages, call);
    } else messages.push(found);
  } else if (type !== "reasoning") {
    // Reasoning items carry no text the chat template renders; anything else needs a hosted tool.
    throw new BadRequest(`${where}: input item type ${String(type)} is not supported by the proxy`);
  }
}

function chatTool(tool: unknown, i: number): Json {
  if (!isJson(tool) || tool.type !== "function" || typeof tool.name !== "string") {
    const type = isJson(tool) ? String(tool.type) : typeof tool;
    throw new BadRequest(`tools[${i}]: only function tools are supported by the proxy (got ${type})`);
  }
  const fn: Json = { name: tool.name };
  if (tool.description !== undefined && tool.description !== null) fn.description = tool.description;
  fn.parameters = tool.parameters ?? { type: "object", properties: {} };
  if (tool.strict !== undefined && tool.strict !== null) fn.strict = tool.strict;
  return { type: "function", function: fn };
}

function chatToolChoice(choice: unknown): unknown {
  if (typeof choice === "string") return choice;
  if (isJson(choice) && choice.type === "function" && typeof choice.name === "string") {
    return { type: "function", function: { name: choice.name } };
  }
  if (isJson(choice) && (choice.type === "auto" || choice.type === "none" || choice.type === "required")) {
    return choice.type;
  }
  throw new BadRequest(`tool_choice ${JSON.stringify(choice)} is not supported by the proxy`);
}

function responseFormat(text: unknown): Json | undefined {
  const format = isJson(text) ? text.format : undefined;
  if (!isJson(format) || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type === "json_schema") {
    const schema: Json = { name: format.name ?? "response", schema: format.schema ?? {} };
    if (format.description !== undefined) schema.description = format.description;
    if (format.strict !== undefined && format.strict !== null) schema.strict = format.strict;
    return { type: "json_schema", json_schema: schema };
  }
  throw new BadRequest(`text.format type ${String(format.type)} is not supported by the proxy`);
}

/**
 * Builds the chat completions body of a Responses request.
 * @param body - the agent's Responses body; not mutated
 * @param rolloutId - the calling rollout (scope of `previous_response_id` and `item_reference`)
 * @param history - the responses served so far
 * @returns the chat body (`model`, `messages`, tools, sampling fields, `stream`) and the conversation to store
 * @throws {BadRequest} malformed input, hosted tools, unsupported item or content types (400)
 * @throws {NotFound} an unknown `previous_response_id` or `item_reference` (404)
 */
export function responsesToChat(body: Json, rolloutId: string, history: ResponseHistory): ResponsesChatRequest {
  const conversation: Json[] = [];
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    const id = String(body.previous_response_id);
    const previous = history.response(rolloutId, id);
    if (!previous) throw new NotFound(`Previous response ${id} not found among this rollout's stored responses`);
    conversation.push(...previous.conversation);
  }
  if (typeof body.input === "string") conversation.push({ role: "user", content: body.input });
  else if (Array.isArray(body.input)) {
    for (const [i, item] of body.input.entries()) pushItem(conversation, item, `input[${i}]`, rolloutId, history);
  } else throw new BadRequest("Responses request needs `input`: a string or a list of items");

  const messages =
    typeof body.instructions === "string" && body.instructions !== ""
      ? [{ role: "system", content: body.instructions }, ...conversation]
      : conversation;
  const chat: Json = { model: body.model, messages };
  if (Array.isArray(body.tools) && body.tools.length > 0) chat.tools = body.tools.map(chatTool);
  if (body.tool_choice !== undefined && body.tool_choice !== null) chat.tool_choice = chatToolChoice(body.tool_choice);
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null) {
    chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const format = responseFormat(body.text);
  if (format) chat.response_format = format;
  if (typeof body.max_output_tokens === "number") chat.max_tokens = body.max_output_tokens;
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  if (typeof body.top_p === "number") chat.top_p = body.top_p;
  if (body.stream === true) chat.stream = true;
  return { chat, conversation };
}
