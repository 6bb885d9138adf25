/**
 * @module Agent SDK (`arclight/agent`): the little an agent inside a rollout may want beyond its OpenAI base URL —
 * the rollout context, an OpenAI client that waits out a paused gateway, and reward/event posts.
 */
/** Reward and event posts to `AGL_EVENT_URL`, idempotent and retried. */
export { EmitFailed, type EmitOptions, emitEvent, emitReward, type StoredEvent } from "./emit.js";
/** The rollout context from the environment (`AGL_*` variables). */
export { type AgentEnv, fromEnv, NotInRollout } from "./env.js";
/** An `openai` client pointed at the proxy whose retries wait out a paused gateway. */
export { type OpenAIClientOptions, openaiClient, pauseAwareFetch } from "./openai.js";
