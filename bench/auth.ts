/**
 * @module Benchmark: what agent tokens cost. (1) `verifyAgentToken` per call, in-process, and a remembered token
 * through `AgentTokenVerifier` (what the gateway pays from an agent's second call on); (2) latency of one event
 * POST (`POST /api/rollouts/{id}/attempt/0/events`) to an in-process gateway on a memory store, sent sequentially with
 * the admin key and with an agent token, interleaved in rounds so machine load hits both alike. Prints setup, load
 * average, medians and the ratio.
 *
 * Usage: `npx tsx bench/auth.ts [--rounds 20] [--per-round 100]`
 */
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { agentKeyFor } from "../src/controller/agent-credentials.js";
import { startTestGateway } from "../src/gateway/testing/serve.js";
import { AgentTokenVerifier, verifyAgentToken } from "../src/protocol/agent-token.js";
import type { Rollout } from "../src/protocol/index.js";

const KEY = "bench-admin-key";
const { values } = parseArgs({
  options: { rounds: { type: "string", default: "20" }, "per-round": { type: "string", default: "100" } },
});
const rounds = Number(values.rounds);
const perRound = Number(values["per-round"]);

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const gw = await startTestGateway({ key: KEY, dashboard: false });
await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
const rollout = ((await (await gw.call("GET", "/api/rollouts/r")).json()) as { rollout: Rollout }).rollout;
const token = agentKeyFor(KEY, rollout, "0");

// (1) verification alone.
const verifyN = 20_000;
const t0 = performance.now();
for (let i = 0; i < verifyN; i++) verifyAgentToken(KEY, token, Date.now() / 1000);
const verifyUs = ((performance.now() - t0) * 1000) / verifyN;
const verifier = new AgentTokenVerifier(KEY);
const t1 = performance.now();
for (let i = 0; i < verifyN; i++) verifier.verify(token, Date.now() / 1000);
const rememberedUs = ((performance.now() - t1) * 1000) / verifyN;

// (2) event POSTs, interleaved.
const pool = new Pool(gw.url, { connections: 1 });
const body = JSON.stringify({ event_type: "log", data: { n: 1 } });
async function post(credential: string): Promise<number> {
  const started = performance.now();
  const res = await pool.request({
    method: "POST",
    path: "/api/rollouts/r/attempt/0/events",
    headers: { authorization: `Bearer ${credential}`, "content-type": "application/json" },
    body,
  });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`event POST answered ${res.statusCode}`);
  return performance.now() - started;
}
const latencies: Record<"admin" | "token", number[]> = { admin: [], token: [] };
for (let i = 0; i < 50; i++) await post(i % 2 ? KEY : token); // warm-up
for (let r = 0; r < rounds; r++) {
  for (const kind of r % 2 ? (["token", "admin"] as const) : (["admin", "token"] as const)) {
    for (let i = 0; i < perRound; i++) latencies[kind].push(await post(kind === "admin" ? KEY : token));
  }
}
await pool.close();
await gw.close();

const [admin, agent] = [median(latencies.admin), median(latencies.token)];
console.log(
  `setup: ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}; in-process gateway, memory store, 1 keep-alive connection, sequential`,
);
console.log(
  `verifyAgentToken: ${verifyUs.toFixed(2)} µs per call; AgentTokenVerifier, token remembered: ` +
    `${rememberedUs.toFixed(3)} µs per call (${verifyN} calls each)`,
);
console.log(
  `event POST median latency: admin key ${admin.toFixed(3)} ms, agent token ${agent.toFixed(3)} ms ` +
    `(${rounds} interleaved rounds × ${perRound} each), ratio token/admin ${(agent / admin).toFixed(3)}`,
);
