/**
 * @module Multi-turn framework agents (test/fixtures/tito: LangChain.js, Vercel AI SDK, Mastra, openai) run as real
 * child processes against a proxy, for the tito stack test and the tito bench: the fake model that drives them through
 * three calculator tool turns, the run of N rollouts of one stack, and the trajectory rows each rollout yields.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { trajectoryRows } from "../../../../../test/support/tito-rows.js";
import type { Store } from "../../../../store/store.js";
import type { ProxyHarness } from "../../../testing/proxy-harness.js";
import type { FakeModel } from "./token-vllm.js";

const AGENTS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../../test/fixtures/tito");

/** The stacks, each an agent script in test/fixtures/tito. */
export const STACKS = ["langchain", "ai-sdk", "mastra", "openai"] as const;
/** One of {@link STACKS}. */
export type Stack = (typeof STACKS)[number];

const STEPS = ["2+3", "5*4", "20-5"];

/**
 * The fake model of the calculator task: one `calc` call per tool result seen so far (2+3, 5*4, 20-5), then the
 * answer. Arguments are written as Qwen models write them (`{"expression": "2+3"}`, Python spacing).
 */
export const calcModel: FakeModel = ({ text }) => {
  const seen = text.split("<tool_response>").length - 1;
  const step = STEPS[seen];
  if (step === undefined) return "The result is 15.";
  return `<tool_call>\n{"name": "calc", "arguments": {"expression": "${step}"}}\n</tool_call>`;
};

/** What an agent reported for one rollout. */
export interface AgentResult {
  /** Model calls (steps) it made. */
  calls: number;
  text: string | null;
}

/** Stacks whose agent keeps its first client for the whole process: one process per rollout. */
const ONE_ROLLOUT_PER_PROCESS: ReadonlySet<Stack> = new Set(["mastra"]);

/**
 * Runs `rollouts` rollouts of one stack's agent (one child process, rollouts one after the other; Mastra one process
 * per rollout).
 * @param h - the proxy (its key is the agent's API key)
 * @param stack - which agent
 * @param rollouts - how many rollouts
 * @returns the rollout ids and each rollout's agent result
 * @throws {Error} when the agent exits non-zero (its stderr tail in the message)
 */
export async function runStack(
  h: ProxyHarness,
  stack: Stack,
  rollouts: number,
): Promise<{ rolloutIds: string[]; results: AgentResult[] }> {
  const rolloutIds: string[] = [];
  for (let i = 0; i < rollouts; i++) rolloutIds.push(await h.newRollout());
  const urls = rolloutIds.map((rid) => h.openaiBase(rid));
  const batches = ONE_ROLLOUT_PER_PROCESS.has(stack) ? urls.map((url) => [url]) : [urls];
  const results: AgentResult[] = [];
  for (const batch of batches) results.push(...(await runAgent(h, stack, batch)));
  return { rolloutIds, results };
}

/** One agent process over `baseUrls`. @throws {Error} when it exits non-zero */
async function runAgent(h: ProxyHarness, stack: Stack, baseUrls: string[]): Promise<AgentResult[]> {
  const out = join(mkdtempSync(join(tmpdir(), "arclight-tito-stack-")), "out.json");
  const env = { ...process.env, BASE_URLS: JSON.stringify(baseUrls), OUT: out, OPENAI_API_KEY: h.key };
  const child = spawn(process.execPath, [join(AGENTS_DIR, `${stack}.mjs`)], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  const code = await new Promise<number | null>((done) => child.on("close", done));
  if (code !== 0) throw new Error(`${stack} agent exited ${code}: ${stderr}`);
  return JSON.parse(readFileSync(out, "utf8")) as AgentResult[];
}

/**
 * Trajectory rows per rollout.
 * @param store - the gateway's store
 * @param rolloutIds - the rollouts
 * @returns rows of each rollout, in order
 */
export async function rowsPerRollout(store: Store, rolloutIds: readonly string[]): Promise<number[]> {
  const counts: number[] = [];
  for (const rid of rolloutIds) counts.push((await trajectoryRows(store, rid)).rows.length);
  return counts;
}
