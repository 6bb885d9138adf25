import { describe, expect, it } from "vitest";
import { RolloutSchema } from "../protocol/index.js";
import { buildAgentEnv, EnvMapError, NO_KEY_PLACEHOLDER, readRolloutPath } from "./agent-env.js";

const rollout = RolloutSchema.parse({
  rollout_id: "r/1",
  input: { a: { b: [10, { c: "deep" }] }, zero: 0, empty: "" },
  is_train: false,
  config: { timeout_seconds: 5, max_attempts: 1 },
  metadata: {},
  status: { state: "queuing", version: 1, created_at: 0, updated_at: 0, last_attempt_id: "0" },
});

describe("readRolloutPath", () => {
  it("walks objects and array indexes, keeping falsy values", () => {
    expect(readRolloutPath(rollout, "input.a.b.1.c", "X")).toBe("deep");
    expect(readRolloutPath(rollout, "input.zero", "X")).toBe(0);
    expect(readRolloutPath(rollout, "input.empty", "X")).toBe("");
  });

  it("names the variable and the path when a segment is missing", () => {
    expect(() => readRolloutPath(rollout, "input.a.x", "FOO")).toThrow(
      new EnvMapError("env_map FOO: path input.a.x not found in rollout r/1"),
    );
    expect(() => readRolloutPath(rollout, "input.zero.x", "FOO")).toThrow(EnvMapError);
    expect(() => readRolloutPath(rollout, "input.a.b.constructor", "FOO")).toThrow(EnvMapError);
  });
});

describe("buildAgentEnv", () => {
  it("URL-encodes ids and uses val mode for validation rollouts", () => {
    const env = buildAgentEnv(rollout, "2", { url: "http://gw:1/", key: "" }, { B: "input.a.b" }, { PATH: "/bin" });
    expect(env.AGL_OPENAI_BASE_URL).toBe("http://gw:1/proxy/rollout/r%2F1/attempt/2/mode/val/openai/v1");
    expect(env.AGL_EVENT_URL).toBe("http://gw:1/api/rollouts/r%2F1/attempt/2/events");
    expect(env.B).toBe('[10,{"c":"deep"}]');
    expect(env.PATH).toBe("/bin");
    expect(env.AGL_KEY).toBe("");
  });
});

describe("standard client variables", () => {
  const gateway = { url: "http://gw:1", key: "k" };
  const proxy = "http://gw:1/proxy/rollout/r%2F1/attempt/2/mode/val";

  it("point OpenAI and Anthropic clients at the attempt's proxy, replacing the controller's own keys", () => {
    const base = { OPENAI_API_KEY: "sk-real", ANTHROPIC_BASE_URL: "https://real", ANTHROPIC_AUTH_TOKEN: "real" };
    const env = buildAgentEnv(rollout, "2", gateway, {}, base);
    expect(env.OPENAI_BASE_URL).toBe(`${proxy}/openai/v1`);
    expect(env.OPENAI_BASE_URL).toBe(env.AGL_OPENAI_BASE_URL);
    expect(env.OPENAI_API_KEY).toBe("k");
    expect(env.ANTHROPIC_BASE_URL).toBe(`${proxy}/anthropic`);
    expect(env.ANTHROPIC_API_KEY).toBe("k");
    expect(env.ANTHROPIC_AUTH_TOKEN).toBeUndefined();
  });

  it("never override a variable the rollout's env_map sets", () => {
    const env = buildAgentEnv(
      rollout,
      "2",
      gateway,
      { OPENAI_BASE_URL: "input.empty", ANTHROPIC_API_KEY: "rollout_id" },
      {},
    );
    expect(env.OPENAI_BASE_URL).toBe("");
    expect(env.ANTHROPIC_API_KEY).toBe("r/1");
    expect(env.OPENAI_API_KEY).toBe("k");
  });

  it("use a placeholder key when the gateway has none, and can be turned off", () => {
    expect(buildAgentEnv(rollout, "2", { url: "http://gw:1", key: "" }, {}, {}).OPENAI_API_KEY).toBe(
      NO_KEY_PLACEHOLDER,
    );
    const off = buildAgentEnv(rollout, "2", gateway, {}, { OPENAI_API_KEY: "mine", ANTHROPIC_AUTH_TOKEN: "t" }, false);
    expect(off.OPENAI_API_KEY).toBe("mine");
    expect(off.ANTHROPIC_AUTH_TOKEN).toBe("t");
    expect(off.OPENAI_BASE_URL).toBeUndefined();
    expect(off.ANTHROPIC_BASE_URL).toBeUndefined();
  });
});
