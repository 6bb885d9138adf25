/**
 * @module Where the embedded engine's worker threads start: the compiled module beside this one, or, when the engine
 * runs from its TypeScript source (tests, tsx), a one-line module that registers tsx's loader in the new thread and
 * then imports the `.ts` source (a worker thread does not inherit the loader of the thread that starts it).
 */

/**
 * The entry URL of a worker module of this directory.
 * @param name - the module's name without extension (`grad-worker`, `decode-worker`)
 * @returns a file URL (compiled) or a `data:` URL that loads the TypeScript source through tsx
 */
export function workerEntry(name: string): URL {
  if (!import.meta.url.endsWith(".ts")) return new URL(`./${name}.js`, import.meta.url);
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const entry = JSON.stringify(new URL(`./${name}.ts`, import.meta.url).href);
  const code = `const { register } = await import(${api}); register(); await import(${entry});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}
