import { describe, expect, it } from "vitest";
import { ValidationFailed } from "../protocol/errors.js";
import { parseTrainerConfig, TrainerConfigSchema } from "./config.js";

describe("trainer config", () => {
  it("fills every field from defaults when given nothing", () => {
    const config = parseTrainerConfig({});
    expect(config.aggregator).toEqual({ level: "trajectory", max_prompt_length: 1024, max_response_length: 1024 });
    expect(config.advantage.estimator).toBe("grpo");
    expect(config.loss.aggregation).toBe("per-rollout-mean");
    expect(config.async.enabled).toBe(false);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("keeps the other defaults of a section given in part", () => {
    const config = parseTrainerConfig({ loss: { clip_low: 0.1 }, n: 8 });
    expect(config.loss).toEqual({
      aggregation: "per-rollout-mean",
      clip_low: 0.1,
      clip_high: 0.28,
      dual_clip: null,
      kl_coef: 0,
      tis_cap: 2,
    });
    expect(config.n).toBe(8);
  });

  it("rejects unknown keys at any depth, naming them", () => {
    expect(() => parseTrainerConfig({ lr: 1 })).toThrow(/unknown field\(s\): lr/);
    expect(() => parseTrainerConfig({ optimizer: { lr: 1 } })).toThrow(/optimizer: unknown field\(s\): lr/);
  });

  it("names the bad key and what it accepts", () => {
    expect(() => parseTrainerConfig({ aggregator: { level: "episode" } })).toThrow(ValidationFailed);
    expect(() => parseTrainerConfig({ aggregator: { level: "episode" } })).toThrow(/aggregator\.level/);
    expect(() => parseTrainerConfig({ loss: { dual_clip: 1 } })).toThrow(/loss\.dual_clip/);
  });

  it("requires async_train_batch_size to exceed train_batch_size when async is enabled", () => {
    expect(() => parseTrainerConfig({ train_batch_size: 16, async: { enabled: true } })).toThrow(
      /async\.async_train_batch_size: must exceed train_batch_size \(16\)/,
    );
    expect(parseTrainerConfig({ train_batch_size: 16, async: { enabled: false } }).async.enabled).toBe(false);
    expect(TrainerConfigSchema.safeParse({ async: { enabled: true, async_train_batch_size: 9 } }).success).toBe(true);
  });

  it("refuses a controller section whose rollouts the gateway would refuse: both launchers, or a bad env name", () => {
    const both = { controller: { command: ["python3", "a.py"], agent_class: "a.js:A" } };
    expect(() => parseTrainerConfig(both)).toThrow(/controller\.agent_class: set command or agent_class, not both/);
    const badEnv = { controller: { command: ["true"], env_map: { "1BAD": "input.q" } } };
    expect(() => parseTrainerConfig(badEnv)).toThrow(/controller\.env_map\.1BAD: .*not an env var name/);
    expect(
      parseTrainerConfig({ controller: { command: ["true"], env_map: { Q_1: "input.q" } } }).controller.env_map,
    ).toEqual({ Q_1: "input.q" });
  });
});
