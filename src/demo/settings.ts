/** @module The calculator demo's settings: example paths, the GRPO trainer config, and the run budgets. */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ModelConfig } from "../engine/embedded/config.js";
import type { PositionInit } from "../engine/embedded/params.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import { type DataItem, readJsonl } from "../trainer/data-order.js";

/** `examples/calculator/` of this package (the same from src/ under tsx and from dist/). */
export const CALCULATOR_DIR = fileURLToPath(new URL("../../examples/calculator/", import.meta.url));

/** The demo's policy: `tiny` with 2 blocks, half the SFT step cost (docs/benchmarks.md, Demo). */
export const DEMO_MODEL: Readonly<ModelConfig> = Object.freeze({
  vocab: 261,
  d_model: 128,
  n_layers: 2,
  n_heads: 4,
  context: 256,
});

/** The torch demo's policy: the bundled tiny Qwen2 config (0.8M parameters, 512-id BPE), random weights. */
export const TORCH_DEMO_MODEL = "new:qwen2-tiny";

/** The torch demo's context (tokens), the embedded demo's: prompt and response limits split it. */
export const TORCH_DEMO_CONTEXT = 256;

/** The torch engine's bundled tokenizer folder (the teacher writes its ids). */
export const TORCH_TOKENIZER_DIR = fileURLToPath(
  new URL("../../python/arclight_torch/assets/tokenizer/", import.meta.url),
);

/** Sinusoidal positions let the 2-block policy copy the question within the SFT budget (docs/benchmarks.md, Demo). */
export const DEMO_POSITION_INIT: PositionInit = "sinusoidal";

/** Symbols-form problems only: within budget the byte policy learns to copy expressions, not translate number words. */
export function isDemoProblem(item: DataItem): boolean {
  const input = item.input as { form?: unknown } | null;
  return typeof input === "object" && input !== null && input.form === "symbols";
}

/** The symbols-form train and validation problems of the config's files, validation cut to `valProblems`. */
export function readDemoProblems(
  config: Readonly<TrainerConfig>,
  budget: Readonly<DemoBudget>,
): { train: DataItem[]; val: DataItem[] } {
  const train = readJsonl(config.data.train_path).filter(isDemoProblem);
  const val = readJsonl(config.data.val_path as string)
    .filter(isDemoProblem)
    .slice(0, budget.valProblems);
  return { train, val };
}

/** Budgets of one demo run. */
export interface DemoBudget {
  /** Teacher demonstrations recorded through the gateway (first N train problems). */
  demonstrations: number;
  /** Share of one-operation questions the teacher answers without the tool, giving RL something to correct. */
  teacherMentalMathShare: number;
  /** SFT warm-start steps and rows per step. */
  sftSteps: number;
  sftBatchSize: number;
  sftLearningRate: number;
  /** SFT steps at the end over which the learning rate falls linearly towards 0 (`sft.lr_decay_steps`). */
  sftLrDecaySteps: number;
  /** GRPO steps; problems per step (groups) and rollouts per problem (group size). */
  rlSteps: number;
  groupsPerStep: number;
  groupSize: number;
  rlLearningRate: number;
  /** GRPO sampling temperature: at 1 the recorded logprobs are the scored policy's, so the PPO ratio starts at 1. */
  trainTemperature: number;
  /** Validation problems (first N symbols-form rows of val.jsonl) and validation every this many RL steps. */
  valProblems: number;
  valInterval: number;
  /** Agent processes at once. */
  poolSize: number;
}

/** The full demo's budget; docs/benchmarks.md (Demo) gives its measured time and results and why these values. */
export const FULL_BUDGET: Readonly<DemoBudget> = Object.freeze({
  demonstrations: 800,
  teacherMentalMathShare: 0.5,
  sftSteps: 1100,
  sftBatchSize: 8,
  sftLearningRate: 3e-3,
  sftLrDecaySteps: 250,
  rlSteps: 8,
  groupsPerStep: 32,
  groupSize: 8,
  rlLearningRate: 7e-4,
  trainTemperature: 1,
  valProblems: 96,
  valInterval: 8,
  poolSize: 16,
});

/** The `--engine torch` budget for two shared cores (docs/torch-engine.md, Demo). */
export const TORCH_BUDGET: Readonly<DemoBudget> = Object.freeze({
  ...FULL_BUDGET,
  teacherMentalMathShare: 0.7,
  demonstrations: 320,
  sftSteps: 240,
  sftLrDecaySteps: 0,
  rlSteps: 4,
  rlLearningRate: 1e-3,
  groupsPerStep: 8,
  valProblems: 48,
  valInterval: 2,
  poolSize: 8,
});

/** `--quick`: the whole pipeline, too short to learn anything (CI runs it). */
export const QUICK_BUDGET: Readonly<DemoBudget> = Object.freeze({
  demonstrations: 8,
  teacherMentalMathShare: 0.7,
  sftSteps: 2,
  sftBatchSize: 4,
  sftLearningRate: 2e-3,
  sftLrDecaySteps: 0,
  rlSteps: 2,
  groupsPerStep: 2,
  groupSize: 2,
  rlLearningRate: 1e-3,
  trainTemperature: 1,
  valProblems: 4,
  valInterval: 1,
  poolSize: 4,
});

/** The bundled calculator agent (`npm run build`), absent when running from src/. */
const COMPILED_AGENT = fileURLToPath(new URL("../examples/calculator/agent.js", import.meta.url));

/** The per-rollout agent argv, resolved from this package: the bundle under node, else `agent.ts` under tsx. */
export function calculatorAgentCommand(): string[] {
  if (existsSync(COMPILED_AGENT)) return [process.execPath, COMPILED_AGENT];
  return [process.execPath, "--import", import.meta.resolve("tsx"), `${CALCULATOR_DIR}agent.ts`];
}

/**
 * The calculator agent as an `agent_class` in reused processes (no Node start per rollout): the bundle, else
 * `agent.ts` with tsx via `NODE_OPTIONS`; returns the value and the extra environment.
 */
export function calculatorAgentClass(): { agentClass: string; env: Record<string, string> } {
  if (existsSync(COMPILED_AGENT)) return { agentClass: `${COMPILED_AGENT}:calculatorRollout`, env: {} };
  const nodeOptions = [process.env.NODE_OPTIONS, `--import ${import.meta.resolve("tsx")}`].filter(Boolean).join(" ");
  return { agentClass: `${CALCULATOR_DIR}agent.ts:calculatorRollout`, env: { NODE_OPTIONS: nodeOptions } };
}

/** The GRPO phase's trainer config; prompt and response limits split `contextLength`. */
export function demoTrainerConfig(name: string, budget: DemoBudget, contextLength: number): Readonly<TrainerConfig> {
  const half = Math.floor(contextLength / 2);
  return Object.freeze(
    parseTrainerConfig({
      name,
      data: { train_path: `${CALCULATOR_DIR}data/train.jsonl`, val_path: `${CALCULATOR_DIR}data/val.jsonl` },
      train_batch_size: budget.groupsPerStep,
      n: budget.groupSize,
      rollout_timeout_seconds: 300,
      controller: {
        agent_class: calculatorAgentClass().agentClass,
        reuse_processes: true,
        env_map: { QUESTION: "input.question", ANSWER: "input.answer" },
        pool_size: budget.poolSize,
      },
      aggregator: { level: "trajectory", max_prompt_length: half, max_response_length: contextLength - half },
      advantage: { estimator: "grpo", norm_by_std: true, rollout_level: true },
      loss: { aggregation: "per-rollout-mean" },
      optimizer: { learning_rate: budget.rlLearningRate, weight_decay: 0, micro_batch_size: 16 },
      total_steps: budget.rlSteps,
      val_interval: budget.valInterval,
      checkpoint_interval: 0,
      seed: 0,
    }),
  );
}
