/**
 * @module The assistant message of a chat choice in vLLM's exact shape, built once for every producer.
 * @see vLLM `vllm/entrypoints/openai/protocol.py` (`ChatMessage`)
 */

/** The assistant message vLLM answers with; `content` null when blank before tool calls, as vLLM writes it. */
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
