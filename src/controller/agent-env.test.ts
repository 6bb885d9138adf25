import { describe, expect, it } from "vitest";
import { RolloutSchema } from "../protocol/index.js";
import { buildAgentEnv, EnvMapError, readRolloutPath } from "./agent-env.js";

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
