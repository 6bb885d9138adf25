/** @module The behaviour a test programs into the fake vLLM server (fake-vllm.ts) for its next calls. */

/** How the fake answers the next calls. Everything is optional; the default is a plain successful answer. */
export interface FakeVllmBehaviour {
  /** Generated text (default "Hello!"). */
  content?: string;
  /** Answer with these hermes tool calls instead of text (several = parallel calls). */
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
  /** Prompt ids to report instead of the fake tokenization (e.g. 100k ids). */
  promptTokenIds?: number[];
  /** Fail this many calls first (counted across calls) with `failStatus`. */
  failTimes?: number;
  /** Status of those failures (default 503). */
  failStatus?: number;
  /** Never answer (the socket stays open until the fake closes). */
  hang?: boolean;
  /** Answer 400 "maximum context length" like vLLM does for an over-long prompt. */
  contextOverflow?: boolean;
  /** SSE: destroy the socket after this many events. */
  dieAfterEvents?: number;
  /** SSE: send vLLM's error event (then `[DONE]`) after this many events. */
  errorAfterEvents?: number;
  /** Wait for `FakeVllm.release` after this many SSE events (0: before answering anything, also non-stream). */
  holdAfterEvents?: number;
  /** Generation steps (0-based, role chunk excluded) whose chunk has `token_ids: null`; non-stream: all null. */
  dropTokenIdsAt?: number[];
  /** Generation steps whose chunk has `logprobs: null` although logprobs were asked. */
  dropLogprobsAt?: number[];
  /**
   * Chat SSE: generation steps whose chunk is not sent at all (the finishing one always is), as vLLM before PR #29074
   * skipped tool-parser-suppressed chunks; the usage chunk still counts their ids.
   */
  skipChunksAt?: number[];
  /** Ids per chunk (default 1); vLLM merges steps when the HTTP side falls behind. */
  tokensPerChunk?: number;
  /**
   * Per-call answer chosen from the request body, merged over the rest (an agent's tool loop: a tool call first,
   * text once a `tool` message is in `messages`).
   */
  decide?: (body: Record<string, unknown>) => FakeVllmBehaviour;
}
