/** @module Public API of the engine: the `Engine` interface, the embedded CPU engine, its tokenizer and config. */

export { initWasmBackend, WasmBackendUnavailable } from "./embedded/backend.js";
export { CheckpointInvalid } from "./embedded/checkpoint.js";
export {
  MODEL_PRESETS,
  type ModelConfig,
  ModelConfigSchema,
  type ModelPreset,
  parseModelConfig,
} from "./embedded/config.js";
export { EmbeddedEngine, type EmbeddedEngineOptions } from "./embedded/engine.js";
export { ByteTokenizer, FIRST_SPECIAL_ID, SPECIAL_TOKENS, type SpecialToken } from "./embedded/tokenizer.js";
export * from "./engine.js";
