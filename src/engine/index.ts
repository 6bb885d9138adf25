/**
 * @module Public API of the engine (`arclight/engine`): the `Engine`, `Tokenizer` and `ChatTemplate` interfaces, the embedded CPU engine,
 * its tokenizer, chat template and config.
 */

/** The `ChatTemplate` interface an engine provides, with the chat wire types it renders. */
export type * from "./chat-template.js";
/** The error a checkpoint directory that cannot be loaded raises. */
export { CheckpointInvalid } from "./checkpoint-error.js";
/** The tfjs wasm backend the embedded engine requires. */
export { initWasmBackend, WasmBackendUnavailable } from "./embedded/backend.js";
/** The embedded engine's ChatML template. */
export { ChatMLTemplate } from "./embedded/chat-template.js";
/** Model shape of the embedded GPT and its presets. */
export {
  MODEL_PRESETS,
  type ModelConfig,
  ModelConfigSchema,
  type ModelPreset,
  parseModelConfig,
} from "./embedded/config.js";
/** The embedded CPU engine (tfjs-wasm). */
export { EmbeddedEngine, type EmbeddedEngineOptions } from "./embedded/engine.js";
/** The byte-level tokenizer with the chat template's special tokens. */
export {
  BYTE_VOCAB_SIZE,
  ByteTokenizer,
  FIRST_SPECIAL_ID,
  SPECIAL_TOKENS,
  type SpecialToken,
} from "./embedded/tokenizer.js";
/** The `Engine` interface every engine implements, with its request, result and training types. */
export * from "./engine.js";
/** The `Tokenizer` interface an engine provides. */
export type { Tokenizer } from "./tokenizer.js";
