/**
 * @module One `abort` listener per signal however many calls watch it: many concurrent `generate` calls often share
 * one `AbortSignal` (a request's, a run's), and a listener per call would pile up on it (Node warns past 10).
 */

/** The callbacks waiting on each watched signal, and the one listener that runs them. */
const watched = new WeakMap<AbortSignal, { callbacks: Set<() => void>; listener: () => void }>();

/**
 * Runs `callback` once when `signal` aborts (at once, synchronously, if it already has).
 * @param signal - the signal to watch
 * @param callback - what to run on abort
 * @returns a function that stops watching (call it when the work ends; harmless after the abort)
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback();
    return () => {};
  }
  let entry = watched.get(signal);
  if (entry === undefined) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      watched.delete(signal);
      for (const run of [...callbacks]) run();
    };
    entry = { callbacks, listener };
    watched.set(signal, entry);
    signal.addEventListener("abort", listener, { once: true });
  }
  const { callbacks, listener } = entry;
  callbacks.add(callback);
  return () => {
    callbacks.delete(callback);
    if (callbacks.size === 0 && watched.get(signal)?.listener === listener) {
      watched.delete(signal);
      signal.removeEventListener("abort", listener);
    }
  };
}
