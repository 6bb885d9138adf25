/** @module One `abort` listener per signal however many calls share it (Node warns past 10 listeners). */

/** The callbacks waiting on each watched signal, and the one listener that runs them. */
const watched = new WeakMap<AbortSignal, { callbacks: Set<() => void>; listener: () => void }>();

/** Runs `callback` once when `signal` aborts (synchronously if it has); returns the unwatch. */
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
