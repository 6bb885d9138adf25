/**
 * @module A server that ends with the process that started it. `startServerChild` sets `ARCLIGHT_PARENT_PID` in the
 * child's environment; a command started by `npx arclight …` (or `npm exec`) watches its parent too: npm passes a
 * SIGTERM to the `sh -c` it runs the command in, the shell dies without passing it on, and the command (a gateway,
 * an engine server) was left running with no one to stop it. A process that calls {@link stopWhenParentGone} sends
 * itself SIGTERM (its usual graceful stop) once that parent is gone, even when the parent was killed with SIGKILL and
 * could stop nothing itself.
 */

/** The variable naming the pid of the process that started this one as a server child. */
export const PARENT_PID_ENV = "ARCLIGHT_PARENT_PID";

/**
 * Which parent this process ends with.
 * @param env - the environment to read (`ARCLIGHT_PARENT_PID`; npm's `npm_command`, `exec` under `npx`/`npm exec`)
 * @param ppid - this process's parent pid now
 * @returns `ARCLIGHT_PARENT_PID` when it is set; else, under `npx`/`npm exec`, `ppid`; else undefined (a command a
 *   user started by hand, or from an npm script, which may well outlive its shell on purpose: `arclight gateway &`)
 */
export function watchedParentPid(env: NodeJS.ProcessEnv, ppid: number): number | undefined {
  const given = env[PARENT_PID_ENV];
  if (given !== undefined) {
    const pid = Number(given);
    return Number.isInteger(pid) && pid >= 2 ? pid : undefined;
  }
  return env.npm_command === "exec" && ppid >= 2 ? ppid : undefined;
}

/**
 * Watches the parent named by {@link watchedParentPid} (nothing when there is none, or when it names a live process
 * that is not this one's parent: a variable inherited from further up): every `intervalMs`, a parent pid other than
 * that one (the parent died and this process was re-parented) sends this process SIGTERM, once.
 * @param env - where to read the variables (default this process's environment)
 * @param intervalMs - how often to look (default 1,000 ms); the timer never keeps the process alive
 * @returns a function that stops watching
 */
export function stopWhenParentGone(env: NodeJS.ProcessEnv = process.env, intervalMs = 1000): () => void {
  const parent = watchedParentPid(env, process.ppid);
  if (parent === undefined) return () => {};
  // A live process that is not our parent: the variable was inherited from further up (an agent a controller child
  // started), not meant for this process.
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
