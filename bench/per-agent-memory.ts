/**
 * @module `npx tsx bench/per-agent-memory.ts`: the serving side's memory of a policy per agent on the torch engine.
 * One worker holding the base model and a LoRA adapter per agent (`--adapters`, what `agents.policy: per_agent`
 * starts) against one worker per agent, each a copy of the base with its adapter (what serving each agent its own
 * model would take), for 1 to `--agents` agents. Each worker is measured by its resident set size (VmRSS of the
 * worker process, after one generation per adapter so every adapter has run; the smaller of two fresh workers) and
 * by the parameters it reports.
 * Flags: `--model` (`new:qwen2-0.5b`, random weights of the real shape), `--agents N` (3), `--rank R` (16, LoRA on
 * q_proj and v_proj). CPU, float32 parameters: the ratios carry over to a GPU, the bytes scale with the dtype.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { RemoteEngine } from "../src/engine/remote/remote-engine.js";
import { testPython } from "../src/testing/python.js";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const MODEL = flag("model", "new:qwen2-0.5b");
const AGENTS = Number(flag("agents", "3"));
const RANK = Number(flag("rank", "16"));
const MIB = 1024 * 1024;

/** Resident set size of a process (bytes), from /proc. */
function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? 0) * 1024;
}

/** What one worker held. */
interface Held {
  /** RSS once loaded, before any sampling (bytes). */
  loaded: number;
  /** RSS after one generation per adapter (bytes). */
  sampled: number;
  parameters: number;
  trainable: number;
}

/**
 * A worker with `adapters`, measured twice (a fresh worker each time) keeping the smaller RSS of each reading: loading
 * passes through transient copies that the allocator may or may not have handed back by the time of the reading.
 */
async function measure(adapters: string[]): Promise<Held> {
  const first = await measureOnce(adapters);
  const second = await measureOnce(adapters);
  return { ...first, loaded: Math.min(first.loaded, second.loaded), sampled: Math.min(first.sampled, second.sampled) };
}

/** A worker with `adapters`: its RSS loaded and after one short generation per adapter, its parameters. Stopped after. */
async function measureOnce(adapters: string[]): Promise<Held> {
  const python = testPython();
  if (python === null) throw new Error("no Python with arclight-torch (set ARCLIGHT_PYTHON)");
  const engine = await RemoteEngine.start({
    python,
    model: MODEL,
    contextLength: 256,
    threads: 1,
    lora: { rank: RANK },
    adapters,
    startTimeoutMs: 900_000,
  });
  try {
    const pid = engine.workerPid;
    if (pid === null) throw new Error("the worker's pid is unknown");
    const loaded = rssBytes(pid);
    const sampling = { temperature: 1, topP: 1, topK: 0, maxTokens: 4, stopTokenIds: [], stop: [] };
    for (const name of adapters)
      await engine.adapterEngine(name).generate([{ promptTokenIds: [1, 2, 3, 4], sampling }]);
    const { parameters, trainable_parameters: trainable } = engine.info;
    return { loaded, sampled: rssBytes(pid), parameters, trainable };
  } finally {
    await engine.close();
  }
}

const names = (k: number) => Array.from({ length: k }, (_, i) => `agent${i}`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const mib = (bytes: number) => (bytes / MIB).toFixed(0);
if (testPython() === null) {
  console.log("per-agent-memory: skipped, no Python with the arclight-torch package (set ARCLIGHT_PYTHON)");
  process.exit(0);
}
console.log(`per-agent-memory: ${MODEL}, LoRA rank ${RANK}, load ${load()}`);
const single = await measure(names(1));
console.log(`one worker, one adapter: ${single.parameters} parameters (${single.trainable} in the adapter)`);
console.log(
  "| agents | one worker, an adapter each: RSS MiB loaded / after sampling | a worker per agent (k x one): RSS MiB " +
    "loaded / after sampling | ratio loaded / after sampling | parameters held, one worker vs k |",
);
console.log("|---|---|---|---|---|");
for (let k = 1; k <= AGENTS; k++) {
  const held = k === 1 ? single : await measure(names(k));
  const ratio = (one: number, each: number) => (one / (k * each)).toFixed(3);
  console.log(
    `| ${k} | ${mib(held.loaded)} / ${mib(held.sampled)} | ${mib(k * single.loaded)} / ${mib(k * single.sampled)} | ` +
      `${ratio(held.loaded, single.loaded)} / ${ratio(held.sampled, single.sampled)} | ` +
      `${held.parameters} vs ${k * single.parameters} |`,
  );
}
console.log(`load at the end ${load()}`);
