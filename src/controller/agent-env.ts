/**
 * @module An agent process's environment: `AGL_*`, the standard OpenAI/Anthropic client variables (so a client built
 * with no arguments is captured), `OTEL_*`, and `env_map` entries read from the rollout.
 */
import type { Rollout } from "../protocol/index.js";
import { otelEnv } from "./otel-env.js";

/** An `env_map` entry names a path the rollout does not have; the rollout fails with this message. */
export class EnvMapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnvMapError";
  }
}

/** Where agents reach the gateway, and the key they present. */
export interface AgentGateway {
  /** Gateway base URL as agents reach it, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** API key agents send (`AGL_KEY`); may be empty. */
  key: string;
}

/** Variables of the controller's environment that hold or point to its admin key; agents do not inherit them. */
export const CONTROLLER_SECRETS: readonly string[] = ["ARCLIGHT_KEY", "ARCLIGHT_KEY_FILE", "AGL_KEY"];

/** The API key given to clients when the gateway has none (auth off): the SDKs refuse to start without one. */
export const NO_KEY_PLACEHOLDER = "arclight-no-key";

/** @returns `<gateway>/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}`, the root of one attempt's proxy routes */
function proxyRootUrl(gatewayUrl: string, rollout: Rollout, attemptId: string): string {
  const mode = rollout.is_train ? "train" : "val";
  const rid = encodeURIComponent(rollout.rollout_id);
  return `${trim(gatewayUrl)}/proxy/rollout/${rid}/attempt/${encodeURIComponent(attemptId)}/mode/${mode}`;
}

/** `<gateway>/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}/openai/v1` */
export function proxyBaseUrl(gatewayUrl: string, rollout: Rollout, attemptId: string): string {
  return `${proxyRootUrl(gatewayUrl, rollout, attemptId)}/openai/v1`;
}

/** `<gateway>/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}/anthropic` (the SDK appends `/v1/messages`). */
export function anthropicBaseUrl(gatewayUrl: string, rollout: Rollout, attemptId: string): string {
  return `${proxyRootUrl(gatewayUrl, rollout, attemptId)}/anthropic`;
}

/** The base URL and key variables the OpenAI and Anthropic SDKs read; an empty key is {@link NO_KEY_PLACEHOLDER}. */
export function standardClientEnv(gateway: AgentGateway, rollout: Rollout, attemptId: string): Record<string, string> {
  const key = gateway.key === "" ? NO_KEY_PLACEHOLDER : gateway.key;
  return {
    OPENAI_BASE_URL: proxyBaseUrl(gateway.url, rollout, attemptId),
    OPENAI_API_KEY: key,
    ANTHROPIC_BASE_URL: anthropicBaseUrl(gateway.url, rollout, attemptId),
    ANTHROPIC_API_KEY: key,
  };
}

/** @returns `<gateway>/api/rollouts/{rid}/attempt/{aid}/events`, where the agent posts rewards and events */
export function eventUrl(gatewayUrl: string, rolloutId: string, attemptId: string): string {
  return `${trim(gatewayUrl)}/api/rollouts/${encodeURIComponent(rolloutId)}/attempt/${encodeURIComponent(attemptId)}/events`;
}

function trim(url: string): string {
  return url.replace(/\/+$/, "");
}

/**
 * Reads a dotted path (`input.items.0`) from the rollout, starting at a top-level field.
 * @throws {EnvMapError} naming the env var and path when a segment is missing
 */
export function readRolloutPath(rollout: Rollout, path: string, envName: string): unknown {
  let value: unknown = rollout;
  for (const segment of path.split(".")) {
    const holder = value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
    if (holder === undefined || !Object.hasOwn(holder, segment) || holder[segment] === undefined) {
      throw new EnvMapError(`env_map ${envName}: path ${path} not found in rollout ${rollout.rollout_id}`);
    }
    value = holder[segment];
  }
  return value;
}

/**
 * One agent process's environment, later layers winning: `baseEnv`; the standard client and OTel variables (replacing
 * the controller's own `OPENAI_API_KEY`, which would reach the real provider); `env_map` entries; `AGL_*`.
 * @throws {EnvMapError} when an `env_map` path is missing
 */
export function buildAgentEnv(
  rollout: Rollout,
  attemptId: string,
  gateway: AgentGateway,
  envMap: Readonly<Record<string, string>>,
  baseEnv: Readonly<Record<string, string | undefined>>,
  standardEnv = true,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(baseEnv)) if (value !== undefined) env[name] = value;
  // The controller's own credentials never reach an agent (AGL_KEY is replaced by the agent's token below).
  for (const name of CONTROLLER_SECRETS) delete env[name];
  if (standardEnv) {
    // The Anthropic SDK sends ANTHROPIC_AUTH_TOKEN as a Bearer token, which the gateway would read before x-api-key.
    delete env.ANTHROPIC_AUTH_TOKEN;
    Object.assign(env, standardClientEnv(gateway, rollout, attemptId));
    Object.assign(env, otelEnv(gateway.url, gateway.key, rollout.rollout_id, attemptId, baseEnv));
  }
  for (const [name, path] of Object.entries(envMap)) {
    const value = readRolloutPath(rollout, path, name);
    env[name] = typeof value === "string" ? value : JSON.stringify(value);
  }
  env.AGL_OPENAI_BASE_URL = proxyBaseUrl(gateway.url, rollout, attemptId);
  env.AGL_EVENT_URL = eventUrl(gateway.url, rollout.rollout_id, attemptId);
  env.AGL_KEY = gateway.key;
  env.AGL_ROLLOUT_ID = rollout.rollout_id;
  env.AGL_ATTEMPT_ID = attemptId;
  return env;
}
