/**
 * @module Bundles the calculator agent (`examples/calculator/agent.ts` with the `openai` SDK inlined) into one ES module,
 * `dist/examples/calculator/agent.js` by default, whose `calculatorRollout` export `arclight demo` runs in reused
 * processes. Node then reads one file instead of resolving some hundred `openai` modules: 0.19 s of CPU per rollout
 * instead of 0.24 s when each rollout is its own process (docs/benchmarks.md, Demo). Run by `npm run build`; `node scripts/bundle-agent.mjs OUTFILE` writes elsewhere.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("../", import.meta.url));
const outfile = process.argv[2] ?? `${root}dist/examples/calculator/agent.js`;

await build({
  entryPoints: [`${root}examples/calculator/agent.ts`],
  outfile,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  logLevel: "warning",
});
