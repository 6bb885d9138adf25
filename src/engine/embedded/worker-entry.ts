/**
 * @module Where worker threads start: the compiled module, or under tsx a `data:` module that registers tsx's loader
 * first (a worker does not inherit its parent's loader).
 */

/** The entry URL of worker module `name` of this directory. */
export function workerEntry(name: string): URL {
  if (!import.meta.url.endsWith(".ts")) return new URL(`./${name}.js`, import.meta.url);
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const entry = JSON.stringify(new URL(`./${name}.ts`, import.meta.url).href);
  const code = `const { register } = await import(${api}); register(); await import(${entry});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}
