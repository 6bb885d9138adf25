/**
 * The cut-down demo as a newcomer runs it, as a real child process (`arclight demo --quick`) in a temporary working
 * directory: gateway child on SQLite, embedded engine, controller, agent processes, teacher server. It checks that
 * the pipeline runs and records what it should; whether the policy learns is measured by the full demo (docs/benchmarks.md).
 * Then `arclight eval` runs on the checkpoint the demo wrote.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { longestDemoRolloutIds } from "../src/demo/rollout-ids.js";
import { FULL_BUDGET, QUICK_BUDGET } from "../src/demo/settings.js";
import { type ProcessResult, runProcess } from "../src/testing/run-process.js";
import { maxRunNameLength } from "../src/trainer/run-name-room.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
// The CLI runs from a temporary directory, so tsx is named by path, not resolved from the working directory.
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const workDir = mkdtempSync(join(tmpdir(), "arclight-demo-test-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** Runs the CLI from source in `workDir` and collects its output; `onSpawn` sees the child process. */
function cli(args: string[], onSpawn?: (child: ChildProcess) => void): Promise<ProcessResult> {
  return runProcess([process.execPath, "--import", TSX, MAIN, ...args], {
    cwd: workDir,
    env: { PATH: process.env.PATH },
    ...(onSpawn ? { onSpawn } : {}),
  });
}

/** Pids of live processes whose /proc/PID/FILE (environ or cmdline) contains `text`. */
function processesWith(text: string, file: "environ" | "cmdline"): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/${file}`, "latin1").includes(text);
      } catch {
        return false; // exited meanwhile, or not ours to read
      }
    })
    .map(Number);
}

/** Waits up to 10 s for every process with `text` in its /proc file to be gone, then asserts none is left. */
async function expectNoProcessWith(text: string, file: "environ" | "cmdline"): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (processesWith(text, file).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(processesWith(text, file)).toEqual([]);
}

/**
 * Sends SIGINT to the CLI once an agent of its run is running (agents carry their rollout id in AGL_ROLLOUT_ID).
 * @param rolloutIdPrefix - the run's rollout ids start with this
 */
function interruptOnceAgentsRun(rolloutIdPrefix: string) {
  let saw = false;
  return {
    sawAgents: () => saw,
    onSpawn(child: ChildProcess) {
      const poll = setInterval(() => {
        if (processesWith(`AGL_ROLLOUT_ID=${rolloutIdPrefix}`, "environ").length === 0) return;
        saw = true;
        clearInterval(poll);
        child.kill("SIGINT");
      }, 50);
      child.on("close", () => clearInterval(poll));
    },
  };
}

/** The longest `--name` a demo with this budget takes, from the ids it builds (the same for any name). */
const maxNameLength = (budget: typeof QUICK_BUDGET) => maxRunNameLength("x", longestDemoRolloutIds("x", budget));

describe("arclight demo --quick", () => {
  it("records demonstrations, warm-starts, trains, validates and writes metrics, plot and checkpoint", async () => {
    // As long a name as --quick takes: every rollout id the run creates (teacher, validation, GRPO) still fits.
    const name = "c".repeat(maxNameLength(QUICK_BUDGET));
    const result = await cli(["demo", "--quick", "--name", name, "--tensorboard-dir", "tb"]);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const runDir = join(workDir, "runs", name);

    // Both phases are tracked: the SFT warm start as its own run `<name>-sft`, GRPO as `<name>`.
    const events = (run: string) => {
      const files = readdirSync(join(workDir, "tb", run)).filter((file) => file.startsWith("events.out.tfevents."));
      expect(files).toHaveLength(1);
      return readFileSync(join(workDir, "tb", run, files[0]!), "latin1");
    };
    const sftEvents = events(`${name}-sft`);
    for (const tag of ["sft/loss", "sft/grad_norm", "checkpoint_path", join(runDir, "warm-start")]) {
      expect(sftEvents).toContain(tag);
    }
    expect(sftEvents).not.toContain("reward/mean");
    expect(events(name)).toContain("reward/mean");
    expect(events(name)).not.toContain("sft/loss");
    expect(result.stdout).toContain("arclight demo (SFT warm start): tracking to tensorboard");

    const summary = JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8"));
    // Every teacher demonstration was recorded through the gateway, scored 1 by the agent, and re-rendered to
    // exactly the ids the teacher returned (no prefix mismatch between turns).
    expect(summary.demonstrations).toEqual({ recorded: 8, kept: 8, rows: 8, mismatches: 0, failed: 0 });
    expect(summary.sft.steps).toBe(2);
    expect(summary.before.count).toBe(4);
    expect(summary.after.count).toBe(4);
    expect(summary.rlSteps).toBe(2);

    const metrics = readFileSync(join(runDir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(metrics[0]).toEqual({ step: 0, "val/reward_mean": summary.before.mean });
    const steps = metrics.filter((m) => m["reward/mean"] !== undefined);
    expect(steps.map((m) => m.step)).toEqual([1, 2]);
    for (const step of steps) {
      // 2 problems x 2 rollouts, each with a reward posted by the agent (none filled in) and one trajectory row.
      expect(step).toMatchObject({ rollouts: 4, groups: 2, rows: 4, reward_filled: 0, mismatches: 0 });
      expect(step.tokens).toBeGreaterThan(0);
      expect(typeof step["val/reward_mean"]).toBe("number");
    }

    const svg = readFileSync(join(runDir, "reward.svg"), "utf8");
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.match(/<path /g)).toHaveLength(2); // train and val curves
    expect(existsSync(join(summary.checkpointDir, "model.safetensors"))).toBe(true);
    expect(result.stdout).toContain("val reward before RL");
    expect(result.stdout).toContain("reward curve");

    const evaluated = await cli(["eval", summary.checkpointDir, "--data", join(runDir, "..", "..", "val.jsonl")]);
    expect(evaluated.code).toBe(2); // no such data file: a user error naming the flag
    expect(evaluated.stderr).toContain("--data");
    const noAnswer = join(workDir, "no-answer.jsonl");
    writeFileSync(
      noAnswer,
      `${JSON.stringify({ question: "1+1", answer: 2 })}\n${JSON.stringify({ question: "2+2" })}\n`,
    );
    const missing = await cli(["eval", summary.checkpointDir, "--data", noAnswer]);
    expect(missing.code).toBe(2); // named before any agent starts
    expect(missing.stderr).toContain("input 2 has no answer (the agent's env_map ANSWER: input.answer)");
    const valPath = fileURLToPath(new URL("../examples/calculator/data/val.jsonl", import.meta.url));
    const ok = await cli(["eval", summary.checkpointDir, "--data", valPath, "--limit", "2"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/arclight eval: 2 inputs from .*: reward \d\.\d{3}, solved/);

    // The saved warm-start policy reproduces the before-RL figure on the run's own validation problems.
    expect(summary.warmStartDir).toBe(join(runDir, "warm-start"));
    expect(result.stdout).toContain(`warm-start policy (before RL): ${summary.warmStartDir}`);
    // The closing lines give the command that does it, built like the final checkpoint's.
    const warmEval = /^evaluate the warm start \(the before-RL figure\): npx arclight (eval .*)$/m.exec(result.stdout);
    expect(warmEval?.[1]).toBe(`eval ${summary.warmStartDir} --data ${join(runDir, "val.jsonl")}`);
    const before = await cli((warmEval?.[1] ?? "").split(" "));
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toContain(`reward ${summary.before.mean.toFixed(3)}`);

    // Ctrl-C during eval stops its agents and gateway child, and removes its temporary directory.
    const evalDirs = () => readdirSync("/tmp").filter((entry) => entry.startsWith("arclight-eval-"));
    const dirsBefore = evalDirs();
    const watch = interruptOnceAgentsRun("eval-");
    const stopped = await cli(["eval", summary.checkpointDir, "--data", valPath, "--pool-size", "2"], watch.onSpawn);
    expect(watch.sawAgents()).toBe(true);
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toContain("arclight eval: stopped");
    await expectNoProcessWith("AGL_ROLLOUT_ID=eval-", "environ");
    await expectNoProcessWith("/arclight-eval-", "cmdline");
    expect(evalDirs().filter((dir) => !dirsBefore.includes(dir))).toEqual([]);

    for (const args of [
      ["eval", summary.checkpointDir, "--data", valPath, "--log-level", "loud"],
      ["demo", "--quick", "--log-level", "loud"],
    ]) {
      const bad = await cli(args);
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim()).toBe(
        "arclight: --log-level loud: expected one of fatal, error, warn, info, debug, trace, silent",
      );
    }
    const parent = await cli(["demo", "--quick", "--name", ".."]);
    expect(parent.code).toBe(2);
    expect(parent.stderr).toContain(`--name "..": letters, digits`);
  }, 240_000);

  it("on SIGINT stops every agent process it started and exits with 130", async () => {
    const name = `sigint-${process.pid}`;
    const watch = interruptOnceAgentsRun(`${name}-`);
    const result = await cli(["demo", "--quick", "--name", name], watch.onSpawn);
    expect(watch.sawAgents()).toBe(true);
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toContain("SIGINT: stopping");
    await expectNoProcessWith(`AGL_ROLLOUT_ID=${name}-`, "environ");
  }, 120_000);

  it("stops cleanly, leaving no process behind, when the reader of its output goes away (| head)", async () => {
    const name = `epipe-${process.pid}`;
    const result = await cli(["demo", "--quick", "--name", name], (child) => {
      child.stdout?.once("data", () => child.stdout?.destroy());
    });
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).not.toContain("EPIPE");
    await expectNoProcessWith(`AGL_ROLLOUT_ID=${name}-`, "environ");
    await expectNoProcessWith(`runs/${name}/gateway.db`, "cmdline");
  }, 120_000);

  it("on SIGINT while its stack is still starting stops the gateway child and exits with 130", async () => {
    const name = `early-${process.pid}`;
    const result = await cli(["demo", "--quick", "--name", name], (child) => {
      // "[1/6] starting gateway …" is printed just before the engine, gateway child and controller start.
      const onData = (chunk: Buffer) => {
        if (!chunk.toString().includes("[1/6]")) return;
        child.stdout?.off("data", onData);
        child.kill("SIGINT");
      };
      child.stdout?.on("data", onData);
    });
    expect(result.code, result.stderr).toBe(130);
    expect(result.stdout).not.toContain("[2/6]");
    await expectNoProcessWith(`runs/${name}/gateway.db`, "cmdline");
    expect(existsSync(join(workDir, "runs", `.${name}.lock`))).toBe(false);
  }, 120_000);

  it("refuses a bad --train-threads or --decode-threads, naming the flag, before it writes anything", async () => {
    for (const [args, message] of [
      [["--train-threads", "0"], "--train-threads"],
      [["--train-threads", "two"], "--train-threads"],
      [["--train-threads", " 2"], "--train-threads  2: expected a positive integer"],
      [["--train-threads", "0x2"], "--train-threads 0x2: expected a positive integer"],
      [["--train-threads", "1e3"], "--train-threads 1e3: expected a positive integer"],
      [["--seed", "1.5"], "--seed 1.5: expected an integer"],
      [["--train-threads", "65"], "--train-threads 65: at most 64"],
      [["--train-threads", "2", "--engine", "torch"], "--train-threads 2: the embedded engine's setting"],
      [["--decode-threads", "65"], "--decode-threads 65: at most 64"],
      [["--decode-threads", "2", "--engine", "torch"], "--decode-threads 2: the embedded engine's setting"],
    ] as const) {
      const result = await cli(["demo", "--quick", "--name", "threads", ...args]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(join(workDir, "runs", "threads"))).toBe(false);
    }
    // Ten CLI starts: eight took 43 s on a machine at load average 2, past 60 s at 6 (fresh-clone CI with a second run
    // beside it).
  }, 150_000);

  it("refuses a --seed the engine cannot tell apart (negative, past 32 bits), naming --seed, before it writes anything", async () => {
    // The engine keeps a seed's low 32 bits: -1 would have given the weights of 4294967295, and 4294967296 those of 0.
    for (const seed of ["-1", "4294967296"]) {
      const result = await cli(["demo", "--quick", "--name", "seeds", "--seed", seed]);
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toBe(`arclight: --seed ${seed}: expected an integer from 0 to 4294967295`);
      expect(existsSync(join(workDir, "runs", "seeds"))).toBe(false);
    }
  }, 60_000);

  it("refuses a --name too long for the rollout ids it would create, naming --name and its most characters", async () => {
    // Such a name would pass a plain run-name check and fail midway (`rollout_id: Too big`), leaving runs/NAME behind.
    for (const [args, budget] of [
      [["--quick"], QUICK_BUDGET],
      [[], FULL_BUDGET],
    ] as const) {
      const max = maxNameLength(budget);
      const name = "n".repeat(max + 1);
      const result = await cli(["demo", ...args, "--name", name]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--name "${"n".repeat(60)}"… (${max + 1} characters): at most ${max} characters`);
      expect(result.stderr).toContain("-teacher-d"); // the longest suffix: a teacher demonstration's
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(existsSync(join(workDir, "runs", name))).toBe(false);
      expect(existsSync(join(workDir, "runs", `.${name}.lock`))).toBe(false);
    }
  }, 60_000);

  it("with --engine torch takes --train-threads 1, and a Python it cannot use leaves no run folder behind", async () => {
    const args = ["--engine", "torch", "--train-threads", "1", "--python", join(workDir, "no-such-python")];
    const result = await cli(["demo", "--quick", "--name", "torchless", ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("no-such-python");
    expect(result.stderr).not.toContain("--train-threads");
    expect(existsSync(join(workDir, "runs", "torchless"))).toBe(false);
  }, 60_000);

  it("refuses a --name whose runs/NAME is a plain file, naming --name, and leaves the file alone", async () => {
    mkdirSync(join(workDir, "runs"), { recursive: true });
    writeFileSync(join(workDir, "runs", "afile"), "keep me");
    const result = await cli(["demo", "--quick", "--name", "afile"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--name afile:");
    expect(result.stderr).toContain("is not a folder");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(join(workDir, "runs", "afile"), "utf8")).toBe("keep me");
  }, 60_000);

  it("refuses, naming --name, when its lock file is a folder, or runs/ is a file (no stack trace)", async () => {
    // Each is a usage error (exit code 2, one line), not a raw EISDIR / ENOTDIR stack trace.
    mkdirSync(join(workDir, "runs", ".lockdir.lock"), { recursive: true });
    const lockIsFolder = await cli(["demo", "--quick", "--name", "lockdir"]);
    expect(lockIsFolder.code).toBe(2);
    expect(lockIsFolder.stderr.trim()).toMatch(/^arclight: --name lockdir: cannot read the lock file .*EISDIR/);
    const elsewhere = mkdtempSync(join(tmpdir(), "arclight-demo-runs-file-"));
    try {
      writeFileSync(join(elsewhere, "runs"), "not a folder");
      const result = await runProcess([process.execPath, "--import", TSX, MAIN, "demo", "--quick"], {
        cwd: elsewhere,
        env: { PATH: process.env.PATH },
      });
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toMatch(/^arclight: --name demo: cannot make .*runs: .*not a folder/);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(readFileSync(join(elsewhere, "runs"), "utf8")).toBe("not a folder");
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses a --name a running demo holds, and takes over a lock whose process is gone or is no demo", async () => {
    mkdirSync(join(workDir, "runs", "held"), { recursive: true });
    writeFileSync(join(workDir, "runs", "held", "demo-run.json"), "{}\n");
    const lock = join(workDir, "runs", ".held.lock");
    // A process whose command line names `demo`, standing in for a running demo.
    const holder = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", "demo"], { stdio: "ignore" });
    try {
      writeFileSync(lock, `${holder.pid}\n`);
      const refused = await cli(["demo", "--quick", "--name", "held"]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--name held: another arclight demo (pid ${holder.pid}) is running`);
      expect(existsSync(join(workDir, "runs", "held", "demo-run.json"))).toBe(true);
    } finally {
      holder.kill();
    }
    // A lock left by a demo killed outright: its pid has exited, or now belongs to another program (this test
    // process). The run gets past it (and then stops at --python) and removes the lock on its way out.
    let exitedPid = 0;
    await runProcess([process.execPath, "-e", "process.exit(0)"], {
      cwd: workDir,
      env: {},
      onSpawn: (child) => {
        exitedPid = child.pid ?? 0;
      },
    });
    for (const stale of [exitedPid, process.pid]) {
      writeFileSync(lock, `${stale}\n`);
      const args = ["--engine", "torch", "--python", join(workDir, "no-such-python")];
      const taken = await cli(["demo", "--quick", "--name", "held", ...args]);
      expect(taken.code, taken.stderr).toBe(2);
      expect(taken.stderr).toContain("no-such-python");
      expect(existsSync(lock)).toBe(false);
    }
  }, 60_000);

  it("--help lists every embedded preset", async () => {
    const help = await cli(["demo", "--help"]);
    expect(help.code).toBe(0);
    for (const preset of ["tiny", "bench", "small", "agent"]) expect(help.stdout).toContain(preset);
  }, 60_000);

  it("refuses a run directory the demo did not write, naming --name", async () => {
    mkdirSync(join(workDir, "runs", "mine"), { recursive: true });
    writeFileSync(join(workDir, "runs", "mine", "notes.txt"), "keep me");
    const result = await cli(["demo", "--quick", "--name", "mine"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--name mine");
    expect(readFileSync(join(workDir, "runs", "mine", "notes.txt"), "utf8")).toBe("keep me");
  }, 60_000);
});
