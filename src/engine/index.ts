/** @module Public API of the engine: the `Engine` interface, the embedded CPU engine, its tokenizer and config. */

/** The tfjs wasm backend the embedded engine requires. */
export { initWasmBackend, WasmBackendUnavailable } from "./embedded/backend.js";
/** The error a checkpoint directory that cannot be loaded raises. */
export { CheckpointInvalid } from "./embedded/checkpoint.js";
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
export { ByteTokenizer, FIRST_SPECIAL_ID, SPECIAL_TOKENS, type SpecialToken } from "./embedded/tokenizer.js";
/** The `Engine` interface every engine implements, with its request, result and training types. */
export * from "./engine.js";
