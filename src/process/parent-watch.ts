/**
 * @module A server that ends with the process that started it, even one killed with SIGKILL. Under `npx`, npm's
 * `sh -c` dies on SIGTERM without passing it on, so the command watches its parent too.
 */

/** The variable naming the pid of the process that started this one as a server child. */
export const PARENT_PID_ENV = "ARCLIGHT_PARENT_PID";

/**
 * @returns `ARCLIGHT_PARENT_PID` when set; else `ppid` under `npx`/`npm exec`; else undefined (a command started by
 *   hand may outlive its shell on purpose: `arclight gateway &`)
 */
export function watchedParentPid(env: NodeJS.ProcessEnv, ppid: number): number | undefined {
  const given = env[PARENT_PID_ENV];
  if (given !== undefined) {
    const pid = Number(given);
    return Number.isInteger(pid) && pid >= 2 ? pid : undefined;
  }
  return env.npm_command === "exec" && ppid >= 2 ? ppid : undefined;
}

/** Sends this process SIGTERM once it is re-parented away from {@link watchedParentPid}; returns the unwatch. */
export function stopWhenParentGone(env: NodeJS.ProcessEnv = process.env, intervalMs = 1000): () => void {
  const parent = watchedParentPid(env, process.ppid);
  if (parent === undefined) return () => {};
  // A live process that is not our parent: the variable was inherited from further up.
  if (process.ppid !== parent && isAlive(parent)) return () => {};
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, "SIGTERM");
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
