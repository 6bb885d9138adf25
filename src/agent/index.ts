/** @module Agent SDK (`arclight/agent`): helpers for agents running inside a rollout. Filled in by the SDK issue. */
export {};
