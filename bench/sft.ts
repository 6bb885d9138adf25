/**
 * @module SFT on recorded traces, measured: record calculator demonstrations from the scripted teacher through a real
 * gateway (real agent processes), then `runSft` (the code `arclight sft` and the demo run) fine-tunes a fresh embedded
 * model (the demo's 2-block shape) on them, with greedy validation rollouts before and after. Prints SFT tokens/s,
 * the losses and the validation reward. Sizes: `node --import tsx bench/sft.ts [DEMOS] [STEPS] [VAL]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { DEMO_MODEL, DEMO_POSITION_INIT, demoTrainerConfig, FULL_BUDGET, isDemoProblem } from "../src/demo/settings.js";
import { startTeacherChild } from "../src/demo/teacher-child.js";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { startTestGateway } from "../src/gateway/testing/serve.js";
import { startStack } from "../src/run/stack.js";
import { readJsonl } from "../src/trainer/data-order.js";
import { runRolloutsOnce, summariseRewards } from "../src/trainer/rollouts-once.js";
import { parseSftConfig } from "../src/trainer/sft-config.js";
import { runSft } from "../src/trainer/sft-run.js";

const [demos, steps, valCount] = [200, 300, 48].map((fallback, i) => Number(process.argv[2 + i] ?? fallback));
const data = new URL("../examples/calculator/data/", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "arclight-bench-sft-"));
const gateway = await startTestGateway({ key: "k", model_name: "policy", val_temperature: 0 });
const engine = await EmbeddedEngine.create({ config: DEMO_MODEL, seed: 0, positionInit: DEMO_POSITION_INIT });
const stack = await startStack({
  runDir: dir,
  modelName: "policy",
  engine: async () => engine,
  gateway: { url: gateway.url, key: "k" },
  controller: { poolSize: 16 },
  logger: pino({ level: "silent" }),
});
const config = demoTrainerConfig("bench-sft", FULL_BUDGET, engine.contextLength);
const train = readJsonl(join(data, "train.jsonl")).filter(isDemoProblem).slice(0, demos);
const val = readJsonl(join(data, "val.jsonl")).filter(isDemoProblem).slice(0, valCount);
console.log(
  `setup: ${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(`       ${demos} teacher demonstrations, ${steps} SFT steps x 8 rows, ${val.length} greedy val problems`);

const teacher = await startTeacherChild(FULL_BUDGET.teacherMentalMathShare);
let started = performance.now();
await stack.client.upsertModels([{ model: "policy", endpoint: teacher.endpoint, version: 0 }]);
await runRolloutsOnce(stack.client, train, { prefix: "teacher", isTrain: true, config, policyVersion: 0 });
await teacher.stop();
console.log(`recorded in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const validate = async (phase: "before" | "after") => {
  await stack.client.deleteModels();
  await stack.client.upsertModels(stack.serving.endpoints.map((endpoint) => ({ model: "policy", endpoint })));
  const result = await runRolloutsOnce(stack.client, val, {
    prefix: `val-${phase}`,
    isTrain: false,
    config,
    policyVersion: engine.policyVersion,
  });
  const summary = summariseRewards(result.rewards);
  console.log(`val ${phase}: reward ${summary.mean.toFixed(3)}, solved ${(summary.solved * 100).toFixed(1)}%`);
  return summary.mean;
};

started = performance.now();
const summary = await runSft({
  config: parseSftConfig({
    source: { gateway_url: gateway.url },
    select: { id_prefix: "teacher-", min_reward: 1 },
    aggregator: config.aggregator,
    sft: { steps, batch_size: 8, learning_rate: 3e-3, val_fraction: 0.1 },
  }),
  client: stack.client,
  engine,
  checkpointDir: join(dir, "checkpoint"),
  metricsPath: null,
  validateReward: validate,
});
console.log(
  `SFT: ${summary.selected} rollouts, ${summary.trainRows} rows (+${summary.heldOutRows} held out); ` +
    `train loss ${summary.firstLoss.toFixed(3)} -> ${summary.lastLoss.toFixed(3)}; held-out loss ` +
    `${summary.heldOutLossBefore?.toFixed(3)} -> ${summary.heldOutLossAfter?.toFixed(3)} nats/token`,
);
console.log(
  `SFT throughput: ${summary.tokensPerSecond.toFixed(0)} trained tokens/s (${summary.trainSeconds.toFixed(1)} s ` +
    `for ${summary.steps} steps); load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
);
await stack.close();
await gateway.close();
rmSync(dir, { recursive: true, force: true });
