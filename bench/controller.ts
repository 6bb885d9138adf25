/**
 * @module Benchmark: rollouts/s the local controller takes from `queuing` to terminal through a pool of 8, with trivial
 * agents (`sh -c 'exit $CODE'`), against a real gateway (memory store) in this process. Baseline: the same number of
 * the same processes spawned with the same concurrency by bare `child_process.spawn`, no gateway, no controller.
 * The ratio is the share of raw spawn throughput the controller keeps.
 *
 * Usage: `npx tsx bench/controller.ts [--rollouts 400] [--pool 8]`
 */
import { spawn } from "node:child_process";
import { availableParallelism, cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startHarness } from "../src/controller/testing/harness.js";

const { values } = parseArgs({
  options: { rollouts: { type: "string", default: "400" }, pool: { type: "string", default: "8" } },
});
const rolloutCount = Number(values.rollouts);
const poolSize = Number(values.pool);
const COMMAND = ["sh", "-c", "exit $CODE"];

/** Bare spawns of the same agent, `poolSize` at a time. @returns wall seconds */
async function baselineSeconds(): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < rolloutCount) {
      const i = next++;
      await new Promise<void>((resolve) => {
        const child = spawn(COMMAND[0]!, COMMAND.slice(1), {
          env: { PATH: process.env.PATH ?? "", CODE: String(i % 10 === 3 ? 1 : 0) },
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });
        child.on("close", () => resolve());
      });
    }
  };
  await Promise.all(Array.from({ length: poolSize }, worker));
  return (performance.now() - started) / 1000;
}

/** The controller taking `rolloutCount` rollouts to terminal. @returns wall seconds and how many failed */
async function controllerSeconds(): Promise<{ seconds: number; failed: number }> {
  const h = await startHarness();
  try {
    const rollouts = await h.create(
      Array.from({ length: rolloutCount }, (_, i) => ({ input: { code: i % 10 === 3 ? 1 : 0 } })),
    );
    const controller = h.controller({
      pool_size: poolSize,
      spawn_rate_per_second: 10_000,
      spawn_burst: poolSize,
      local: { command: COMMAND, env_map: { CODE: "input.code" } },
    });
    const started = performance.now();
    controller.start();
    const done = await h.waitTerminal(
      rollouts.map((r) => r.rollout_id),
      600_000,
    );
    const seconds = (performance.now() - started) / 1000;
    return { seconds, failed: done.filter((r) => r.status.state === "failed").length };
  } finally {
    await h.close();
  }
}

const cores = availableParallelism();
console.log(
  `setup: ${rolloutCount} rollouts, pool ${poolSize}, agent ${JSON.stringify(COMMAND)}, ${cores} cores (${cpus()[0]?.model ?? "?"}), load ${loadavg()[0]!.toFixed(2)}`,
);
const base = await baselineSeconds();
const run = await controllerSeconds();
const baseRate = rolloutCount / base;
const rate = rolloutCount / run.seconds;
console.log(`baseline (bare spawn, ${poolSize} at a time): ${base.toFixed(2)} s, ${baseRate.toFixed(1)} processes/s`);
console.log(
  `controller (gateway + reconcile loop): ${run.seconds.toFixed(2)} s, ${rate.toFixed(1)} rollouts/s, ${run.failed} failed (expected ${Math.floor((rolloutCount + 6) / 10)})`,
);
console.log(`ratio controller/baseline: ${(rate / baseRate).toFixed(2)}`);
