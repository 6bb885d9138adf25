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
      objective: "ppo",
      aggregation: "per-rollout-mean",
      norm_length: null,
      clip_low: 0.1,
      clip_high: null,
      dual_clip: null,
      kl_coef: 0,
      tis_cap: 2,
    });
    expect(config.n).toBe(8);
  });

  it("selects the objectives by name and refuses unknown ones with the names it knows", () => {
    const config = parseTrainerConfig({
      advantage: { estimator: "dr_grpo" },
      loss: { objective: "gspo", aggregation: "token-sum-norm", norm_length: 512 },
      dynamic_sampling: { enabled: true, max_extra_rounds: 2 },
      overlong_shaping: { max_length: 256, buffer: 32 },
    });
    expect(config.loss.objective).toBe("gspo");
    expect(config.dynamic_sampling).toEqual({ enabled: true, max_extra_rounds: 2 });
    expect(config.overlong_shaping).toEqual({ max_length: 256, buffer: 32, factor: 1 });
    expect(() => parseTrainerConfig({ loss: { objective: "gpso" } })).toThrow(
      /loss\.objective: unknown loss objective "gpso": one of ppo, gspo, cispo/,
    );
    expect(() => parseTrainerConfig({ advantage: { estimator: "drgrpo" } })).toThrow(
      /advantage\.estimator: unknown advantage estimator "drgrpo": one of grpo, dr_grpo, rloo, reinforce/,
    );
    expect(() => parseTrainerConfig({ loss: { aggregation: "seq-mean" } })).toThrow(/unknown loss aggregation/);
    expect(() => parseTrainerConfig({ loss: { objective: "cispo", dual_clip: 3 } })).toThrow(
      /loss\.dual_clip: dual_clip applies to objective ppo only, not cispo/,
    );
    expect(() => parseTrainerConfig({ overlong_shaping: { max_length: 16, buffer: 16 } })).toThrow(
      /overlong_shaping\.buffer: buffer must be smaller than max_length/,
    );
    expect(() =>
      parseTrainerConfig({ dynamic_sampling: { enabled: true }, async: { enabled: true, async_train_batch_size: 9 } }),
    ).toThrow(/dynamic_sampling\.enabled: dynamic sampling runs in sync mode only/);
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

  it("gives each agent a policy only when agents.train names them one by one, none frozen, on LoRA with torch", () => {
    const agents = (train: string[], frozen: string[] = []) => ({ agents: { policy: "per_agent", train, frozen } });
    expect(parseTrainerConfig(agents(["writer", "rewriter"], ["checker"])).agents.policy).toBe("per_agent");
    expect(parseTrainerConfig({}).agents.policy).toBe("shared");
    expect(() => parseTrainerConfig(agents([]))).toThrow("agents.policy: per_agent needs agents.train to name each");
    expect(() => parseTrainerConfig(agents(["/w.*/"]))).toThrow('agents.train entry "/w.*/" cannot name a policy');
    expect(() => parseTrainerConfig(agents(["base"]))).toThrow('agents.train entry "base" cannot name a policy');
    expect(() => parseTrainerConfig(agents(["v1.2"]))).toThrow('agents.train entry "v1.2" cannot name a policy');
    expect(() => parseTrainerConfig(agents(["w", "w"]))).toThrow("agents.train names an agent twice");
    expect(() => parseTrainerConfig(agents(["w"], ["w"]))).toThrow(
      'agent "w" is both in agents.train and agents.frozen',
    );
    expect(() => parseTrainerConfig(agents(["writer", "checker"], ["/che.*/"]))).toThrow(
      'agent "checker" is both in agents.train and agents.frozen (/che.*/)',
    );
    expect(parseTrainerConfig(agents(["writer"], ["/che.*/"])).agents.frozen).toEqual(["/che.*/"]);
    const torch = { engine: { kind: "torch", model: "new:qwen2-tiny" }, ...agents(["w"]) };
    expect(() => parseTrainerConfig(torch)).toThrow("per_agent on the torch engine needs engine.lora");
    const lora = { ...torch, engine: { ...torch.engine, lora: { rank: 4 } } };
    expect(parseTrainerConfig(lora).agents.train).toEqual(["w"]);
  });

  it("requires async_train_batch_size to exceed train_batch_size when async is enabled", () => {
    expect(() => parseTrainerConfig({ train_batch_size: 16, async: { enabled: true } })).toThrow(
      /async\.async_train_batch_size: must exceed train_batch_size \(16\)/,
    );
    expect(parseTrainerConfig({ train_batch_size: 16, async: { enabled: false } }).async.enabled).toBe(false);
    expect(TrainerConfigSchema.safeParse({ async: { enabled: true, async_train_batch_size: 9 } }).success).toBe(true);
  });

  it("requires max_staleness of at least 1 when async is enabled (0 would admit one step's groups: sync)", () => {
    const zero = { train_batch_size: 2, async: { enabled: true, async_train_batch_size: 4, max_staleness: 0 } };
    expect(() => parseTrainerConfig(zero)).toThrow(/async\.max_staleness: must be at least 1 when async is enabled/);
    expect(parseTrainerConfig({ async: { enabled: false, max_staleness: 0 } }).async.max_staleness).toBe(0);
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
