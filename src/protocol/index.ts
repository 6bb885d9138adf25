/** @module Everything every component may import: wire types, the state machine, errors, validation. */
/** The agent of each model call: recorded by the proxy, or the enclosing span's `gen_ai.agent.name`. */
export * from "./agent-name.js";
/** Errors that reach the wire (`ArclightError` and its subclasses). */
export * from "./errors.js";
/** Events: append-only records per attempt (`model_request`, `reward`, `log`, custom) and their zod schemas. */
export * from "./event.js";
/** Model endpoints: which OpenAI-compatible servers serve a model, at which policy version. */
export * from "./model.js";
/** Named, versioned resources (e.g. a system prompt) and AGL's `ResourcesUpdate` snapshot. */
export * from "./resource.js";
/** Rollouts, their configs, creates and patches. */
export * from "./rollout.js";
/** Training runs as the dashboard shows them: config and step metrics. */
export * from "./run.js";
/** `span` events (OpenTelemetry spans of agents), the `arclight.*` attribute names, W3C `traceparent`. */
export * from "./span.js";
/** One attempt's spans, model calls and rewards as a tree (`arclight inspect --level spans`). */
export * from "./span-tree.js";
/** The rollout state machine. */
export * from "./state.js";
/** Text checks shared by the schemas (well-formed UTF-16). */
export * from "./text.js";
/** The trimmed triplet view of events (token ids, logprobs, rewards) the trainer reads. */
export * from "./triplet.js";
/** Schema validation that throws `ValidationFailed`. */
export * from "./validate.js";
