/**
 * @module The sequential form of a conversation in which a framework regrouped tool turns: an assistant message with
 * several tool calls followed by their results becomes one assistant turn per call, each followed by its result.
 * Mastra sends `[assistant(c1, c2), tool(c1), tool(c2)]` back for what the model produced as
 * `[assistant(c1), tool(c1), assistant(c2), tool(c2)]`; `tito` tries this form when the conversation as sent repeats
 * no recorded turn.
 */

type Json = Record<string, unknown>;

/** The tool results right after index `from`, by `tool_call_id`; undefined unless there is exactly one per call. */
function resultsFor(messages: readonly Json[], from: number, calls: readonly Json[]): Json[] | undefined {
  const results = new Map<unknown, Json>();
  for (let i = from; i < messages.length && messages[i]!.role === "tool"; i++) {
    results.set(messages[i]!.tool_call_id, messages[i]!);
  }
  if (results.size !== calls.length) return undefined;
  const ordered = calls.map((call) => results.get(call.id));
  return ordered.every((r) => r !== undefined) ? (ordered as Json[]) : undefined;
}

/**
 * The conversation with each multi-call assistant message (whose calls each have exactly one result right after it)
 * split into single-call turns, each followed by its result; the first turn keeps the message's text.
 * @param messages - the agent's messages
 * @returns a new list, or the same list when nothing was split
 */
export function sequentialTurns(messages: readonly Json[]): readonly Json[] {
  const out: Json[] = [];
  let changed = false;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
    const results = message.role === "assistant" && calls.length > 1 ? resultsFor(messages, i + 1, calls) : undefined;
    if (!results) {
      out.push(message);
      continue;
    }
    calls.forEach((call, k) => {
      out.push({ ...message, content: k === 0 ? message.content : null, tool_calls: [call] }, results[k]!);
    });
    i += calls.length;
    changed = true;
  }
  return changed ? out : messages;
}
