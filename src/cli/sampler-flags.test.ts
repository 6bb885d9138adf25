import { describe, expect, it } from "vitest";
import type { EngineSpec } from "../run/engine-factory.js";
import { parseTrainerConfig } from "../trainer/config.js";
import { CliError } from "./cli-error.js";
import { type SamplerFlags, vllmSamplerOf } from "./sampler-flags.js";

/** A torch engine spec on a model folder; `lora` null is a full fine-tune. */
const torch = (lora: { rank: number } | null, model = "/models/m") =>
  ({ kind: "torch", model, seed: 0, torch: { lora } }) as unknown as EngineSpec;

/** `vllmSamplerOf` on a config whose engine section is `engine`. */
const samplerOf = (
  engine: Record<string, unknown>,
  flags: SamplerFlags = {},
  spec = torch({ rank: 4 }),
  agents: Record<string, unknown> = {},
) => vllmSamplerOf(parseTrainerConfig({ engine: { kind: "torch", sampler: "vllm", ...engine }, agents }), flags, spec);

describe("vLLM sampler flags", () => {
  it("launch settings give a managed sampler with the replicas and the model vLLM loads", () => {
    const sampler = samplerOf({ vllm: { replicas: 2, launch: { gpus: ["0", "1"] } } });
    expect(sampler).toMatchObject({
      endpoints: [],
      weights: "lora",
      launch: { replicas: 2, model: "/models/m", loraRank: 4 },
    });
  });

  it("--vllm-launch takes every default; --vllm-replicas overrides the count", () => {
    const sampler = samplerOf({}, { vllmLaunch: true, vllmReplicas: "3" }, torch(null));
    expect(sampler).toMatchObject({ weights: "full", launch: { replicas: 3, settings: { command: "vllm", port: 0 } } });
  });

  it("refuses launch with endpoints, a new: preset, a bad --vllm-replicas, too few gpus and a rank above 512", () => {
    const refusals: [Record<string, unknown>, SamplerFlags, EngineSpec, RegExp][] = [
      [
        { vllm: { launch: {} }, vllm_endpoints: ["http://h:8000/v1"] },
        {},
        torch(null),
        /not with engine.vllm_endpoints/,
      ],
      [{ vllm: { launch: {} } }, {}, torch(null, "new:qwen2-tiny"), /vLLM cannot load new:qwen2-tiny/],
      [{}, { vllmLaunch: true, vllmReplicas: "0" }, torch(null), /--vllm-replicas 0: expected a positive integer/],
      [{ vllm: { launch: { gpus: ["0"] } } }, { vllmReplicas: "2" }, torch(null), /launch.gpus has 1 entries/],
      [{ vllm: { launch: {} } }, {}, torch({ rank: 1024 }), /engine.lora.rank 1024: vLLM serves LoRA ranks up to 512/],
      [{}, { vllmReplicas: "2", vllmEndpoint: ["http://h/v1"] }, torch(null), /--vllm-replicas: needs --vllm-launch/],
    ];
    for (const [engine, flags, spec, message] of refusals) {
      expect(() => samplerOf(engine, flags, spec)).toThrow(CliError);
      expect(() => samplerOf(engine, flags, spec)).toThrow(message);
    }
  });

  it("without launch a full fine-tune samples from vllm_endpoints", () => {
    const sampler = samplerOf({ vllm_endpoints: ["http://h:8000/v1"] }, {}, torch(null));
    expect(sampler).toEqual({ endpoints: ["http://h:8000/v1"], sleep: false, weights: "full", launch: null });
  });

  it("frozen agents ride on the replicas' base weights with LoRA from engine.model, not full weights or --init-from", () => {
    const agents = { frozen: ["critic"], frozen_model: "frozen" };
    const launch = { vllm: { launch: {} } };
    expect(samplerOf(launch, {}, torch({ rank: 4 }), agents)?.launch?.frozenModel).toBe("frozen");
    expect(samplerOf(launch, {}, torch(null), agents)?.launch?.frozenModel).toBeNull();
    expect(samplerOf(launch, { initFrom: "/ckpt" }, torch({ rank: 4 }), agents)?.launch?.frozenModel).toBeNull();
    expect(samplerOf(launch, {}, torch({ rank: 4 }))?.launch?.frozenModel).toBeNull();
  });
});
