/**
 * @module A server child that ends with its parent: `startServerChild` sets `ARCLIGHT_PARENT_PID` in the child's
 * environment, and a child that calls {@link stopWhenParentGone} sends itself SIGTERM (its usual graceful stop) once
 * its parent process is gone, even when the parent was killed with SIGKILL and could stop nothing itself.
 */

/** The variable naming the pid of the process that started this one as a server child. */
export const PARENT_PID_ENV = "ARCLIGHT_PARENT_PID";

/**
 * Watches the parent named by `ARCLIGHT_PARENT_PID` (nothing when it is unset, e.g. a server a user started by hand):
 * every `intervalMs`, a parent pid other than that one (the parent died and this process was re-parented) sends this
 * process SIGTERM, once.
 * @param env - where to read the variable (default this process's environment)
 * @param intervalMs - how often to look (default 1,000 ms); the timer never keeps the process alive
 * @returns a function that stops watching
 */
export function stopWhenParentGone(env: NodeJS.ProcessEnv = process.env, intervalMs = 1000): () => void {
  const parent = Number(env[PARENT_PID_ENV]);
  if (!Number.isInteger(parent) || parent < 2) return () => {};
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, "SIGTERM");
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
