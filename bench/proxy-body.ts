/**
 * @module Cost of rewriting one agent body in the proxy, µs per call: the lossless splice (`setFields` on the text the
 * agent sent) against the parse-and-re-serialise baseline it replaced (`JSON.stringify({ ...body, ...fields })`).
 * Both start from the parsed body the proxy needs anyway, so `JSON.parse` is in neither figure. Rounds alternate
 * between the two so machine load hits both alike; the median round is printed.
 */
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { setFields } from "../src/gateway/proxy/call-request.js";

const ROUNDS = 15;
const FIELDS = { model: "policy", temperature: 1, return_token_ids: true, logprobs: true };

function body(turns: number): string {
  const turn = "The quick brown fox jumps over the lazy dog; ".repeat(22);
  const messages = Array.from({ length: turns }, (_, k) => ({ role: k % 2 ? "assistant" : "user", content: turn }));
  return JSON.stringify({ model: "agent", messages, max_tokens: 4, seed: 7, top_p: 0.95 });
}

/** @returns µs per call of `fn` over `calls` calls */
function time(fn: () => string, calls: number): number {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) sink += fn().length;
  const us = ((performance.now() - t0) * 1000) / calls;
  if (sink === 0) throw new Error("nothing produced");
  return us;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

console.log(
  `setup: ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}; ${ROUNDS} alternating rounds; node ${process.version}`,
);
for (const [name, turns, calls] of [
  ["small (1 turn)", 1, 20_000],
  ["large (24 turns)", 24, 2_000],
  ["huge (400 turns)", 400, 100],
] as const) {
  const text = body(turns);
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const splice: number[] = [];
  const restringify: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    splice.push(time(() => setFields(text, FIELDS), calls));
    restringify.push(time(() => JSON.stringify({ ...parsed, ...FIELDS }), calls));
  }
  const s = median(splice);
  const r = median(restringify);
  console.log(
    `${name.padEnd(17)} ${String(text.length).padStart(7)} bytes: splice ${s.toFixed(2)} µs, ` +
      `parse+stringify baseline ${r.toFixed(2)} µs, ratio splice/baseline ${(s / r).toFixed(2)}`,
  );
}
