/** @module `npm run bench`: runs every benchmark in bench/ in turn, each in its own process, printing its figures. */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const benches = readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run-all.ts")
  .filter((f) => only.length === 0 || only.some((name) => f.startsWith(name)))
  .sort();
let failed = 0;
for (const file of benches) {
  console.log(`\n=== bench/${file}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", join(here, file)], { stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`bench/${file} exited with ${result.status ?? result.signal}`);
    failed++;
  }
}
process.exitCode = failed > 0 ? 1 : 0;
