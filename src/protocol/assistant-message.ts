/**
 * @module The assistant message of a chat completion choice in vLLM's exact shape (`ChatMessage` of vLLM's OpenAI
 * server): every field vLLM writes, the ones it leaves empty as `null`. Built in one place for the engine server, the
 * proxy's stream assembler and the token-in-token-out answer, so the three cannot drift apart.
 * @see vLLM `vllm/entrypoints/openai/protocol.py` (`ChatMessage`)
 */

/**
 * The assistant message vLLM answers with.
 * @param content - the text; null when there is none (vLLM: blank text before tool calls is null)
 * @param toolCalls - the parsed tool calls, `[]` when none
 * @param reasoning - reasoning text, when the server separates it; else null
 */
export function vllmAssistantMessage<T>(
  content: string | null,
  toolCalls: T[],
  reasoning: string | null = null,
): {
  role: "assistant";
  content: string | null;
  refusal: null;
  annotations: null;
  audio: null;
  function_call: null;
  tool_calls: T[];
  reasoning: string | null;
} {
  return {
    role: "assistant",
    content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
    tool_calls: toolCalls,
    reasoning,
  };
}
