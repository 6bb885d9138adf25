/**
 * @module Bench: multi-turn framework agents (LangChain.js, Vercel AI SDK, Mastra, openai; three calc tool turns
 * each, test/fixtures/tito) through the proxy in `passthrough` and `tito` mode against a fake vLLM that tokenises with
 * the repository's real BPE tokenizer (in its own process). Prints, per stack and mode, the fraction of rollouts that
 * aggregate into one trajectory row, and the gateway's CPU time per model call (this process: gateway + store, the
 * agents and the fake run elsewhere). Modes alternate chunk by chunk (A/B interleaved).
 * Usage: `npm run bench -- tito` (ROLLOUTS=50 per stack and mode by default, CHUNK=10, STACKS=a,b to pick stacks).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { rowsPerRollout, runStack, STACKS, type Stack } from "../src/gateway/proxy/tito/testing/stack-rollouts.js";
import { QWEN2_TOKENIZER_DIR } from "../src/gateway/proxy/tito/testing/tokenizer-fixture.js";
import { type ProxyHarness, startProxyHarness } from "../src/gateway/testing/proxy-harness.js";
import type { ProxyModelMode } from "../src/protocol/index.js";

const ROLLOUTS = Number(process.env.ROLLOUTS ?? 50);
const CHUNK = Number(process.env.CHUNK ?? 10);
const MODES: ProxyModelMode[] = ["passthrough", "tito"];
const ONLY = process.env.STACKS?.split(",");

interface Tally {
  rollouts: number;
  oneRow: number;
  calls: number;
  cpuMs: number;
}

async function startFake(): Promise<{ url: string; stop: () => void }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "tito/fake-vllm.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await once(child.stdout, "data")) as [Buffer];
  return { url: line.toString("utf8").trim(), stop: () => child.kill() };
}

async function chunk(h: ProxyHarness, stack: Stack, n: number, tally: Tally): Promise<void> {
  const before = process.cpuUsage();
  const { rolloutIds, results } = await runStack(h, stack, n);
  const used = process.cpuUsage(before);
  tally.cpuMs += (used.user + used.system) / 1000;
  // Calls as the gateway recorded them (not as the agent reports them): each rollout must have its own.
  for (const rid of rolloutIds) tally.calls += (await h.store.listEvents(rid, { eventType: "model_request" })).length;
  tally.rollouts += n;
  if (results.length !== n) throw new Error(`${stack}: ${results.length} results for ${n} rollouts`);
  tally.oneRow += (await rowsPerRollout(h.store, rolloutIds)).filter((rows) => rows === 1).length;
}

const fake = await startFake();
const harness: Record<ProxyModelMode, ProxyHarness> = {
  passthrough: await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] }),
  tito: await startProxyHarness({
    models: [{ model: "policy", endpoint: fake.url, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR }],
  }),
};
console.log(
  `setup: ${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`${ROLLOUTS} rollouts per stack and mode, chunks of ${CHUNK}, modes alternating per chunk`);
const rows: string[] = [];
for (const stack of STACKS.filter((s) => !ONLY || ONLY.includes(s))) {
  const tallies = Object.fromEntries(MODES.map((m) => [m, { rollouts: 0, oneRow: 0, calls: 0, cpuMs: 0 }])) as Record<
    ProxyModelMode,
    Tally
  >;
  for (let done = 0; done < ROLLOUTS; done += CHUNK) {
    for (const mode of MODES) await chunk(harness[mode], stack, Math.min(CHUNK, ROLLOUTS - done), tallies[mode]);
  }
  for (const mode of MODES) {
    const t = tallies[mode];
    const line =
      `${stack.padEnd(10)} ${mode.padEnd(11)} one-row ${t.oneRow}/${t.rollouts} = ${(t.oneRow / t.rollouts).toFixed(2)}` +
      `  calls/rollout ${(t.calls / t.rollouts).toFixed(2)}  gateway CPU ${(t.cpuMs / t.calls).toFixed(2)} ms/call`;
    console.log(line);
    rows.push(line);
  }
}
console.log(
  `load after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await harness.passthrough.close();
await harness.tito.close();
fake.stop();
