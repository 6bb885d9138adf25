/**
 * @module Agent SDK (`arclight/agent`): the little an agent inside a rollout may want beyond its OpenAI base URL —
 * the rollout context, an OpenAI client that waits out a paused gateway, and reward/event posts.
 */
export { EmitFailed, type EmitOptions, emitEvent, emitReward, type StoredEvent } from "./emit.js";
export { type AgentEnv, fromEnv, NotInRollout } from "./env.js";
export { type OpenAIClientOptions, openaiClient, pauseAwareFetch } from "./openai.js";
