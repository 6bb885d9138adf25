/**
 * @module The multi-agent example's SFT warm start for `bench/credit-compare.ts`, the way `arclight demo` warm-starts
 * the calculator: start the stack (gateway child on SQLite, the demo's 2-block embedded policy, local controller),
 * record the scripted teacher's demonstrations of the unchanged workflow through the gateway
 * (`examples/multi-agent/teacher.ts`, served by arclight's engine server as the model endpoint), SFT on them through
 * `arclight sft`'s code (`runSft`, transition rows of all three roles), save the policy to `runs/NAME/warm-start/`,
 * and score it on the val set (greedy). Flags: `--name` (default `credit-multi-warm`), `--sft-steps` (default 150),
 * `--mistake-share` (the teacher writer's wrong share, default 0.3), `--seed` (default 0), `--val N` (default 40).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pino } from "pino";
import { parse } from "yaml";
import { MultiAgentTeacherEngine } from "../examples/multi-agent/teacher.js";
import { resolveAgentPaths } from "../src/cli/agent-paths.js";
import { DEMO_MODEL, DEMO_POSITION_INIT } from "../src/demo/settings.js";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { buildEngineServer } from "../src/engine/server/app.js";
import { type Stack, withStack } from "../src/run/stack.js";
import { parseTrainerConfig, type TrainerConfig } from "../src/trainer/config.js";
import { type DataItem, readJsonl } from "../src/trainer/data-order.js";
import { localControllerSettings } from "../src/trainer/rollout-groups.js";
import { runRolloutsOnce, summariseRewards } from "../src/trainer/rollouts-once.js";
import { parseSftConfig } from "../src/trainer/sft-config.js";
import { runSft } from "../src/trainer/sft-run.js";

const ROOT = resolve(import.meta.dirname, "..");
const EXAMPLE = join(ROOT, "examples", "multi-agent");

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const NAME = flag("name", "credit-multi-warm");
const SFT_STEPS = Number(flag("sft-steps", "150"));
const MISTAKE_SHARE = Number(flag("mistake-share", "0.3"));
const SEED = Number(flag("seed", "0"));
const VAL = Number(flag("val", "40"));
const MODEL = "policy";

/** The example's trainer config with absolute data paths (what the recording and validation rollouts run). */
function exampleConfig(): Readonly<TrainerConfig> {
  const yaml = parse(readFileSync(join(EXAMPLE, "train.yaml"), "utf8")) as Record<string, unknown>;
  const config = parseTrainerConfig({
    ...yaml,
    name: NAME,
    data: { train_path: join(EXAMPLE, "data", "train.jsonl"), val_path: join(EXAMPLE, "data", "val.jsonl") },
  });
  // The YAML names the agent's files relative to itself, as `arclight train` reads them.
  return Object.freeze({ ...config, controller: resolveAgentPaths(config.controller, EXAMPLE) });
}

/** Records one teacher demonstration per train input through the gateway. */
async function record(stack: Stack, config: Readonly<TrainerConfig>, items: DataItem[]): Promise<void> {
  const teacher = new MultiAgentTeacherEngine({ writerMistakeShare: MISTAKE_SHARE });
  const server = await buildEngineServer({ engine: teacher, modelName: MODEL, forceCloseConnections: true });
  const url = await server.listen({ host: "127.0.0.1", port: 0 });
  try {
    await stack.client.deleteModels();
    await stack.client.upsertModels([{ model: MODEL, endpoint: `${url}/v1`, version: 0 }]);
    const batch = await runRolloutsOnce(stack.client, items, {
      prefix: `${NAME}-teacher`,
      isTrain: true,
      config,
      policyVersion: 0,
    });
    const reward = summariseRewards(batch.rewards);
    console.log(
      `${items.length} demonstrations: teacher reward ${reward.mean.toFixed(3)}, ${batch.failedIds.length} failed`,
    );
  } finally {
    await server.close();
    await stack.client.deleteModels();
  }
}

/** Greedy validation of the served policy. @returns mean final reward */
async function validate(stack: Stack, config: Readonly<TrainerConfig>, items: DataItem[]): Promise<number> {
  await stack.client.upsertModels(stack.serving.endpoints.map((endpoint) => ({ model: MODEL, endpoint, version: 0 })));
  const batch = await runRolloutsOnce(stack.client, items, {
    prefix: `${NAME}-val`,
    isTrain: false,
    config,
    policyVersion: 0,
  });
  return summariseRewards(batch.rewards).mean;
}

async function main(): Promise<void> {
  const started = performance.now();
  const config = exampleConfig();
  const runDir = join(ROOT, "runs", NAME);
  const engine = await EmbeddedEngine.create({ config: DEMO_MODEL, seed: SEED, positionInit: DEMO_POSITION_INIT });
  const stackOptions = {
    runDir,
    modelName: MODEL,
    engine: async () => engine,
    gatewayArgs: ["--val-temperature", "0"],
    controller: { poolSize: 8, settings: localControllerSettings(config.controller) },
    logger: pino({ level: "warn" }),
  };
  await withStack(stackOptions, async (stack) => {
    await record(stack, config, readJsonl(config.data.train_path));
    const sft = await runSft({
      config: parseSftConfig({
        name: NAME,
        source: { gateway_url: stack.gatewayUrl },
        select: { id_prefix: `${NAME}-teacher-d`, min_reward: 1 },
        aggregator: config.aggregator,
        sft: {
          steps: SFT_STEPS,
          batch_size: 16,
          learning_rate: 3e-3,
          weight_decay: 0,
          max_grad_norm: 1,
          val_fraction: 0,
        },
        seed: SEED,
      }),
      client: stack.client,
      engine,
      checkpointDir: join(runDir, "warm-start"),
      metricsPath: null,
    });
    console.log(
      `SFT ${sft.steps} steps on ${sft.trainRows} rows: loss ${sft.firstLoss.toFixed(3)} -> ${sft.lastLoss.toFixed(3)}`,
    );
    const val = readJsonl(config.data.val_path as string).slice(0, VAL);
    console.log(`warm start: val reward ${(await validate(stack, config, val)).toFixed(3)} on ${val.length} (greedy)`);
  });
  console.log(`saved ${join(runDir, "warm-start")}; ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
