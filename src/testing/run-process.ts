/** @module Runs a command to completion in tests, collecting its exit code and output. */
import { type ChildProcess, spawn } from "node:child_process";

/** What a finished process left. */
export interface ProcessResult {
  /** Exit code; null when a signal ended it. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns `argv` with exactly `options.env` and resolves with code, stdout and stderr once it exited. */
export function runProcess(
  argv: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; onSpawn?: (child: ChildProcess) => void },
): Promise<ProcessResult> {
  const [exe, ...args] = argv;
  if (exe === undefined) return Promise.reject(new RangeError("argv is empty"));
  const child = spawn(exe, args, { cwd: options.cwd, env: options.env });
  options.onSpawn?.(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
