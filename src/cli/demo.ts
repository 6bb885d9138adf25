/**
 * @module `arclight demo`: the bundled calculator agent learns with RL on the embedded engine, in one command —
 * teacher demonstrations recorded through the gateway, SFT warm start, GRPO, reward table and curve; everything in
 * runs/NAME/.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import { processAlive } from "../controller/local.js";
import { longestDemoRolloutIds } from "../demo/rollout-ids.js";
import { type DemoOptions, type DemoSummary, runDemo } from "../demo/run-demo.js";
import { type DemoBudget, FULL_BUDGET, QUICK_BUDGET, TORCH_BUDGET } from "../demo/settings.js";
import { MAX_TRAIN_THREADS } from "../engine/embedded/config.js";
import { TorchPackageMissing } from "../engine/remote/worker-process.js";
import { makeDirs } from "../fs/make-dirs.js";
import { EMBEDDED_PRESETS } from "../run/engine-factory.js";
import { TrackingConfigSchema } from "../tracking/config.js";
import { CliError } from "./cli-error.js";
import {
  checkRunName,
  checkRunNameRoom,
  listenForInterrupt,
  logLevel,
  positiveInt,
  presetFlag,
  seedFlag,
} from "./common-flags.js";
import { addTrackingOptions, applyTrackingFlags, startTrackers, type TrackingFlags } from "./tracking-flags.js";

/** Flags of `arclight demo`. */
interface DemoFlags extends TrackingFlags {
  name: string;
  quick?: boolean;
  steps?: string;
  preset?: string;
  /** embedded (default) or torch. */
  engine: string;
  /** Python with arclight-torch, for --engine torch. */
  python: string;
  seed: string;
  /** Threads per embedded training step; default min(2, cores). */
  trainThreads?: string;
  decodeThreads?: string;
  logLevel: string;
}

/** Marker file that says a run directory was written by the demo (and may be replaced by the next demo). */
const MARKER = "demo-run.json";

/** The budget from `--quick` and `--steps` (validation still runs after the last step). */
function budgetOf(flags: DemoFlags): DemoBudget {
  const base = flags.quick ? QUICK_BUDGET : flags.engine === "torch" ? TORCH_BUDGET : FULL_BUDGET;
  if (flags.steps === undefined) return base;
  const rlSteps = positiveInt("--steps", flags.steps);
  return { ...base, rlSteps, valInterval: Math.min(base.valInterval, rlSteps) };
}

/**
 * Prepares runs/NAME: creates it, or empties one an earlier demo wrote.
 * @throws {CliError} when runs/NAME is not a folder, or exists, is not empty, and was not written by the demo
 */
function prepareRunDir(runDir: string, name: string): void {
  if (existsSync(runDir) && !statSync(runDir).isDirectory()) {
    throw new CliError(`--name ${name}: ${runDir} exists and is not a folder; pick another name`);
  }
  if (existsSync(runDir) && readdirSync(runDir).length > 0) {
    if (!existsSync(join(runDir, MARKER))) {
      throw new CliError(`--name ${name}: ${runDir} exists and was not written by arclight demo; pick another name`);
    }
    rmSync(runDir, { recursive: true, force: true });
  }
  makeDirs(runDir);
  writeFileSync(join(runDir, MARKER), `${JSON.stringify({ name, started: new Date().toISOString() })}\n`);
}

/** Removes runs/NAME when a demo that failed wrote nothing there but its marker (e.g. the torch package is missing). */
function removeIfOnlyMarker(runDir: string): void {
  const entries = existsSync(runDir) ? readdirSync(runDir) : [];
  if (entries.length === 1 && entries[0] === MARKER) rmSync(runDir, { recursive: true, force: true });
}

/**
 * True when the process with this pid is an arclight demo: on Linux its command line names `demo` (a pid reused by
 * another program after a reboot or a `kill -9` does not hold the lock); elsewhere, when any process has the pid.
 */
function demoRuns(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").includes("demo");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && existsSync("/proc/self")) return false;
  }
  return processAlive(pid);
}

/** The text of a lock file; a lock path that is not a readable file (a folder, say) is the user's to clear. */
function readLock(path: string, refuse: (what: string, err: unknown) => CliError): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw refuse(`read the lock file ${path}`, err);
  }
}

/**
 * Takes runs/.NAME.lock for this process, so two demos with the same `--name` cannot empty each other's folder. A lock
 * whose process is not a running demo (one killed with `kill -9`, or a pid since reused) is taken over.
 * @returns a function that releases the lock
 * @throws {CliError} naming --name when a running demo holds it, or the runs folder or the lock file cannot be made or read
 */
function lockRunName(runDir: string, name: string): () => void {
  const path = join(dirname(runDir), `.${name}.lock`);
  const refuse = (what: string, err: unknown) =>
    new CliError(`--name ${name}: cannot ${what}: ${(err as Error).message}`);
  try {
    makeDirs(dirname(path));
  } catch (err) {
    throw refuse(`make ${dirname(path)}`, err);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx");
      writeFileSync(fd, `${process.pid}\n`);
      closeSync(fd);
      // Released on the way out too when a second Ctrl-C exits at once.
      const release = () => rmSync(path, { force: true });
      process.once("exit", release);
      return () => {
        process.off("exit", release);
        release();
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw refuse(`create ${path}`, err);
    }
    const holder = Number.parseInt(readLock(path, refuse), 10);
    if (Number.isInteger(holder) && holder !== process.pid && demoRuns(holder)) {
      throw new CliError(
        `--name ${name}: another arclight demo (pid ${holder}) is running in ${runDir}; pick another name`,
      );
    }
    rmSync(path, { force: true }); // its demo is gone: a stale lock
  }
}

/**
 * What the run folder holds, read from the folder itself (so it never lags behind the files): names in order, folders
 * with a trailing `/`; the SQLite store's `-wal`/`-shm` companions left out.
 */
function runFiles(runDir: string): string {
  return readdirSync(runDir, { withFileTypes: true })
    .filter((entry) => !/\.db-(wal|shm|journal)$/.test(entry.name))
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort()
    .join(", ");
}

/** The command that scores an embedded checkpoint on the run's validation problems (runs/NAME/val.jsonl). */
function evalCommand(checkpointDir: string, runDir: string): string {
  return `npx arclight eval ${checkpointDir} --data ${join(runDir, "val.jsonl")}`;
}

/**
 * The closing lines: before/after, wall time, where the files are, and how to evaluate the final and the warm-start
 * checkpoints (`arclight eval` reads embedded checkpoints only).
 */
function printSummary(summary: DemoSummary, runDir: string, engine: string): void {
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const minutes = Math.floor(summary.wallSeconds / 60);
  const seconds = Math.round(summary.wallSeconds % 60);
  console.log(
    [
      "",
      `val reward before RL ${summary.before.mean.toFixed(3)} (solved ${pct(summary.before.solved)}) -> after ` +
        `${summary.rlSteps} GRPO steps ${summary.after.mean.toFixed(3)} (solved ${pct(summary.after.solved)})`,
      `wall time ${minutes}m${String(seconds).padStart(2, "0")}s`,
      `files in ${runDir}: ${runFiles(runDir)}`,
      engine === "torch"
        ? `final checkpoint: ${summary.checkpointDir} (a Hugging Face folder: serve it with arclight engine serve ` +
          "--engine torch --model DIR; arclight eval reads embedded-engine checkpoints only)"
        : `final checkpoint: ${summary.checkpointDir} (evaluate it: ${evalCommand(summary.checkpointDir, runDir)})`,
      `warm-start policy (before RL): ${summary.warmStartDir}`,
      ...(engine === "torch"
        ? []
        : [`evaluate the warm start (the before-RL figure): ${evalCommand(summary.warmStartDir, runDir)}`]),
    ].join("\n"),
  );
}

/**
 * The torch engine's settings `--engine` and `--python` name, or undefined for the embedded engine.
 * @throws {CliError} for an unknown --engine, or --preset or --train-threads with --engine torch
 */
function torchOf(flags: DemoFlags): { python: string } | undefined {
  if (flags.engine !== "embedded" && flags.engine !== "torch") {
    throw new CliError(`--engine ${flags.engine}: expected embedded or torch`);
  }
  if (flags.engine === "embedded") return undefined;
  const embeddedOnly = [
    ["--train-threads", flags.trainThreads, "trains with PyTorch's own threads"],
    ["--decode-threads", flags.decodeThreads, "samples in its worker"],
  ] as const;
  for (const [name, value, torchDoes] of embeddedOnly) {
    if (value !== undefined && positiveInt(name, value) !== 1) {
      throw new CliError(
        `${name} ${value}: the embedded engine's setting; --engine torch ${torchDoes} (leave it out, or 1)`,
      );
    }
  }
  if (flags.preset !== undefined)
    throw new CliError("--preset: embedded engine presets only (not with --engine torch)");
  return { python: flags.python };
}

/**
 * The demo's training and decoding threads when `--train-threads` or `--decode-threads` is not given: 2, or 1 on a
 * one-core machine.
 */
function defaultThreads(): number {
  return Math.min(2, availableParallelism());
}

/**
 * A thread-count flag of the embedded engine.
 * @throws {CliError} naming the flag for a non-positive or non-integer value, or one above the engine's limit
 */
function threadsFlag(name: string, value: string | undefined): number {
  const threads = value === undefined ? defaultThreads() : positiveInt(name, value);
  if (threads > MAX_TRAIN_THREADS) throw new CliError(`${name} ${threads}: at most ${MAX_TRAIN_THREADS}`);
  return threads;
}

/** Runs the command. */
async function demo(flags: DemoFlags): Promise<void> {
  checkRunName("--name", flags.name);
  const level = logLevel(flags.logLevel);
  const preset = flags.preset === undefined ? null : presetFlag("--preset", flags.preset);
  const torch = torchOf(flags);
  const seed = seedFlag("--seed", flags.seed);
  const trainThreads = threadsFlag("--train-threads", flags.trainThreads);
  const decodeThreads = threadsFlag("--decode-threads", flags.decodeThreads);
  const budget = budgetOf(flags);
  checkRunNameRoom("--name", flags.name, longestDemoRolloutIds(flags.name, budget));
  const runDir = resolve("runs", flags.name);
  const unlock = lockRunName(runDir, flags.name);
  try {
    prepareRunDir(runDir, flags.name);
    console.log(`arclight demo: run ${flags.name}${flags.quick ? " (quick)" : ""} -> ${runDir}`);
    const options = {
      name: flags.name,
      runDir,
      budget,
      preset,
      ...(torch ? { torch } : {}),
      seed,
      trainThreads,
      decodeThreads,
    };
    const logger = pino({ level });
    const tracking = TrackingConfigSchema.parse(applyTrackingFlags({}, flags).tracking ?? {});
    const trackers = startTrackers("demo", tracking, flags.name, { ...options, budget }, logger);
    let status: "finished" | "failed" = "failed";
    try {
      // The SFT warm start is a tracker run of its own, `<name>-sft`: its steps count from 1, as GRPO's do.
      const startSftTrackers = (config: Record<string, unknown>) =>
        startTrackers("demo (SFT warm start)", tracking, `${flags.name}-sft`, config, logger);
      await runStoppable({ ...options, logger, trackers, startSftTrackers }, flags.engine);
      status = process.exitCode === 130 ? "failed" : "finished";
    } finally {
      await trackers.finish(status);
    }
  } finally {
    unlock();
  }
}

/** Runs the demo in a prepared runs/NAME, with Ctrl-C stopping everything it started (exit 130). */
async function runStoppable(options: Omit<DemoOptions, "signal">, engine: string): Promise<void> {
  const interrupt = listenForInterrupt("demo", "stopping the gateway, engine, controller and agents");
  try {
    const summary = await runDemo({ ...options, signal: interrupt.signal });
    printSummary(summary, options.runDir, engine);
  } catch (err) {
    removeIfOnlyMarker(options.runDir);
    if (err instanceof TorchPackageMissing) throw new CliError(err.message);
    if (!interrupt.signal.aborted) throw err;
    console.error("arclight demo: stopped");
    process.exitCode = 130;
  } finally {
    interrupt.dispose();
  }
}

/**
 * Registers `arclight demo`.
 * @param program - the root commander program
 */
export function registerDemo(program: Command): void {
  const command = program
    .command("demo")
    .description(
      "Train the bundled calculator agent with SFT + GRPO on the embedded engine (time and results: docs/benchmarks.md)",
    )
    .option("--name <name>", "run name: files go to runs/NAME (an earlier demo run there is replaced)", "demo")
    .option("--quick", "a cut-down run: checks the pipeline, learns nothing")
    .option("--steps <n>", `GRPO steps (default ${FULL_BUDGET.rlSteps}; --quick ${QUICK_BUDGET.rlSteps})`)
    .option(
      "--preset <name>",
      `embedded engine model preset instead of the demo's 2-block model (${EMBEDDED_PRESETS.join(", ")})`,
    )
    .option(
      "--engine <kind>",
      "embedded, or torch: the tiny Qwen2 in a PyTorch worker (docs/torch-engine.md)",
      "embedded",
    )
    .option("--python <path>", "--engine torch: Python interpreter with the arclight-torch package", "python3")
    .option("--seed <n>", "seed of the weight init and the SFT row order", "0")
    .option(
      "--train-threads <n>",
      "threads per embedded training step (default 2 on 2+ cores; 1 reproduces the one-thread runs of " +
        "docs/benchmarks.md)",
    )
    .option(
      "--decode-threads <n>",
      "threads that decode the rollouts' model calls in the embedded engine (default 2 on 2+ cores; 1: slower " +
        "sampling, one core)",
    )
    .option("--log-level <level>", "pino log level of the components", "warn");
  addTrackingOptions(command).action(demo);
}
