/** @module Everything every component may import: wire types, the state machine, errors, validation. */
export * from "./errors.js";
export * from "./event.js";
export * from "./model.js";
export * from "./rollout.js";
export * from "./state.js";
export * from "./text.js";
export * from "./triplet.js";
export * from "./validate.js";
