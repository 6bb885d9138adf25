/**
 * @module The calculator demo's settings: where the bundled example lives, the trainer config of its GRPO phase,
 * and the budgets of the full and the `--quick` run (demonstrations, SFT steps, RL steps, validation size).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ModelConfig } from "../engine/embedded/config.js";
import type { PositionInit } from "../engine/embedded/params.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import { type DataItem, readJsonl } from "../trainer/data-order.js";

/** `examples/calculator/` of this package (the same from src/ under tsx and from dist/). */
export const CALCULATOR_DIR = fileURLToPath(new URL("../../examples/calculator/", import.meta.url));

/**
 * The demo's policy: the `tiny` preset's width and context with 2 blocks instead of 4: each SFT step costs about
 * half, and in SFT runs of equal wall time it reached a non-zero calculator reward where `tiny` stayed at 0.
 */
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

/**
 * How the demo policy's position table starts (see {@link PositionInit}): sinusoidal, which let the 2-block policy
 * start copying the question into the tool call within the SFT budget (docs/benchmarks.md, Demo).
 */
export const DEMO_POSITION_INIT: PositionInit = "sinusoidal";

/**
 * The demo trains and validates on the problems written in symbols (`"12+7*3"`), about half of each split. Within
 * the demo's budget the byte-level policy learns to copy an expression into its tool call, but not also to translate
 * number words (docs/benchmarks.md, Demo); `arclight train` on the same files uses both forms.
 * @param item - a dataset row (`{index, input}`)
 * @returns true for a symbols-form problem
 */
export function isDemoProblem(item: DataItem): boolean {
  const input = item.input as { form?: unknown } | null;
  return typeof input === "object" && input !== null && input.form === "symbols";
}

/**
 * The demo's train and validation problems: the symbols-form rows ({@link isDemoProblem}) of the config's data files,
 * validation cut to the budget's `valProblems`.
 * @param config - the demo's trainer config ({@link demoTrainerConfig}: `data.train_path`, `data.val_path`)
 * @param budget - `valProblems`
 * @returns the problems, in file order
 */
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
  /**
   * Share of one-operation questions the teacher answers from memory instead of calling the tool (see the
   * teacher's `TeacherOptions`): demonstrations a policy without arithmetic cannot imitate well, so RL has
   * something to correct that SFT teaches wrongly.
   */
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
  /**
   * Sampling temperature of the GRPO rollouts (the gateway's train temperature). At 1 the returned logprobs are
   * those of the policy the loss scores, so the PPO ratio starts at exactly 1; below 1 they are the tempered
   * sampler's, a bias the loss does not correct.
   */
  trainTemperature: number;
  /** Validation problems (first N symbols-form rows of val.jsonl) and validation every this many RL steps. */
  valProblems: number;
  valInterval: number;
  /** Agent processes at once. */
  poolSize: number;
}

/**
 * The full demo (see docs/benchmarks.md, Demo, for its measured time and results). 800 demonstrations and 1,100 SFT
 * steps, the learning rate falling linearly over the last 250: the policy's remaining errors after RL are mostly
 * miscopied tool calls, which SFT, not GRPO, reduces; and a warm start that copies better gains more from RL, which
 * makes it call the tool where the teacher did arithmetic "in its head". The teacher does that for half of the
 * one-operation questions: with more, the warm start copies those questions into a tool call worse and RL ends lower;
 * with fewer, the warm start already calls the tool and RL has little to correct. 8 GRPO steps of 32 problems x 8
 * rollouts at learning rate 7e-4, validating once after the last: twice as many steps, or a learning rate of 1e-3,
 * did not end higher. Fewer demonstrations or SFT steps left the warm start too weak for RL to lift
 * (docs/benchmarks.md, Demo).
 */
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

/**
 * The torch demo (`--engine torch`) on two shared cores: fewer demonstrations, SFT steps and rollouts than
 * {@link FULL_BUDGET}, the teacher's share of answers from memory it was measured with,
 * and GRPO at the learning rate it was measured with, 1e-3 (docs/torch-engine.md, Demo, for its measured time and
 * result).
 */
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

/**
 * The calculator agent bundled into one ES module by `npm run build` (`scripts/bundle-agent.mjs`, run by `npm ci`
 * through `prepare`): `dist/examples/calculator/agent.js` beside this module's compiled copy, the `openai` SDK inside
 * it. Absent when this module runs from src/ (tests, tsx).
 */
const COMPILED_AGENT = fileURLToPath(new URL("../examples/calculator/agent.js", import.meta.url));

/**
 * The agent command the controller runs per rollout, resolved from this package so the demo works from any working
 * directory: the bundled agent under plain node when it exists, else `examples/calculator/agent.ts` under tsx (tsx
 * compiles the agent in every new process). One process per rollout: a whole rollout of the bundle costs about 0.19 s
 * of CPU, of the unbundled compiled agent 0.24 s, of a bare `node -e ''` 0.06 s (docs/benchmarks.md, Demo); the demo
 * itself runs {@link calculatorAgentClass} in reused processes instead.
 * @returns argv
 */
export function calculatorAgentCommand(): string[] {
  if (existsSync(COMPILED_AGENT)) return [process.execPath, COMPILED_AGENT];
  return [process.execPath, "--import", import.meta.resolve("tsx"), `${CALCULATOR_DIR}agent.ts`];
}

/**
 * The calculator agent as the demo's controller runs it: the `calculatorRollout` export (an `agent_class`) in reused
 * processes (`reuse_processes`), so the demo's rollouts do not each start Node and load the agent
 * (docs/benchmarks.md, Demo). The bundle under plain node when it exists; else `agent.ts`, with tsx loaded through
 * `NODE_OPTIONS` (once per runner process).
 * @returns the `agent_class` value and the environment the controller's agents need on top of its own
 */
export function calculatorAgentClass(): { agentClass: string; env: Record<string, string> } {
  if (existsSync(COMPILED_AGENT)) return { agentClass: `${COMPILED_AGENT}:calculatorRollout`, env: {} };
  const nodeOptions = [process.env.NODE_OPTIONS, `--import ${import.meta.resolve("tsx")}`].filter(Boolean).join(" ");
  return { agentClass: `${CALCULATOR_DIR}agent.ts:calculatorRollout`, env: { NODE_OPTIONS: nodeOptions } };
}

/**
 * The trainer config of the demo's GRPO phase: trajectory aggregation, rollout-level GRPO advantages, PPO clip,
 * the calculator agent ({@link calculatorAgentClass}, reused processes) with `QUESTION`/`ANSWER` from each input.
 * @param name - run name (runs/NAME)
 * @param budget - steps, group sizes, learning rate, validation interval
 * @param contextLength - the engine's context (tokens): prompt and response limits split it
 * @returns the frozen config
 */
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
