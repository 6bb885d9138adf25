/**
 * @module Engine server sampling throughput: tokens/s of the real embedded engine (the 0.84M-param `bench` preset)
 * behind the real HTTP server, with 1, 16 and 64 concurrent `/v1/completions` requests of 64 new tokens each.
 * Target: >= 2.5k tokens/s at 16 concurrent requests. Each line also measures the same requests sent to
 * `engine.generate` directly, so the HTTP/direct ratio shows the server's own overhead whatever the machine's load;
 * tokens per CPU-second (client and server share this process) is what an idle core would give.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { buildEngineServer } from "../src/engine/server/app.js";

const NEW_TOKENS = 64;
const CONCURRENCY = [1, 16, 64];
const TARGET_TOKENS_PER_S_AT_16 = 2500;

/** One completions request; returns the tokens it generated. */
async function complete(url: string, seed: number): Promise<number> {
  const response = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "Hello, world", max_tokens: NEW_TOKENS, seed, return_token_ids: true, logprobs: 0 }),
  });
  if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { usage: { completion_tokens: number } };
  return body.usage.completion_tokens;
}

/** The same request straight to `engine.generate` (no HTTP), for the server-overhead ratio. */
async function generateDirect(engine: EmbeddedEngine, seed: number): Promise<number> {
  const sampling = {
    temperature: 1,
    topP: 1,
    topK: 0,
    maxTokens: NEW_TOKENS,
    stopTokenIds: [engine.tokenizer.eosId],
    stop: [],
    seed,
  };
  const [result] = await engine.generate([{ promptTokenIds: engine.tokenizer.encode("Hello, world"), sampling }]);
  return result?.tokenIds.length ?? 0;
}

/** Runs `concurrency` requests at once, `rounds` times; returns generated tokens and wall seconds. */
async function measure(
  one: (seed: number) => Promise<number>,
  concurrency: number,
  rounds: number,
): Promise<{ tokens: number; seconds: number; cpuSeconds: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let tokens = 0;
  for (let round = 0; round < rounds; round++) {
    const counts = await Promise.all(Array.from({ length: concurrency }, (_, i) => one(round * 1000 + i)));
    tokens += counts.reduce((a, b) => a + b, 0);
  }
  const used = process.cpuUsage(cpu);
  return { tokens, seconds: (performance.now() - start) / 1000, cpuSeconds: (used.user + used.system) / 1e6 };
}

const engine = await EmbeddedEngine.create({ config: "bench", seed: 0 });
const app = await buildEngineServer({ engine, modelName: "bench" });
const url = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(
  `setup: ${cpus()[0]?.model ?? "cpu"} x${availableParallelism()}, load average ${loadavg()[0]?.toFixed(2)}, node ${process.version}, model bench ` +
    `(d_model 128, 4 layers, 4 heads, context 128), ${NEW_TOKENS} new tokens per request, /v1/completions over HTTP`,
);
const http = (seed: number) => complete(url, seed);
const direct = (seed: number) => generateDirect(engine, seed);
let at16 = 0;
for (const concurrency of CONCURRENCY) {
  // Warm-up waves on both paths, so neither is measured with colder JIT code than the other.
  await measure(http, concurrency, 1);
  await measure(direct, concurrency, 1);
  // About 1,000+ tokens per figure at 1 and 16 (a wave of 16 lasts ~0.25 s, too short to time alone on shared cores).
  const rounds = concurrency === 1 ? 8 : concurrency === 16 ? 6 : 2;
  const { tokens, seconds, cpuSeconds } = await measure(http, concurrency, rounds);
  const rate = tokens / seconds;
  if (concurrency === 16) at16 = rate;
  const alone = await measure(direct, concurrency, rounds);
  const directRate = alone.tokens / alone.seconds;
  console.log(
    `concurrency ${String(concurrency).padStart(2)}: HTTP ${tokens} tokens in ${seconds.toFixed(2)} s = ${rate.toFixed(0)} tokens/s; ` +
      `${(tokens / cpuSeconds).toFixed(0)} tokens per cpu-s; engine.generate directly ${directRate.toFixed(0)} tokens/s, ` +
      `${(alone.tokens / alone.cpuSeconds).toFixed(0)} tokens per cpu-s; HTTP/direct ${(rate / directRate).toFixed(2)} (wall), ` +
      `${(tokens / cpuSeconds / (alone.tokens / alone.cpuSeconds)).toFixed(2)} (cpu)`,
  );
}
console.log(
  `baseline: target ${TARGET_TOKENS_PER_S_AT_16} tokens/s at 16 concurrent; ratio ${(at16 / TARGET_TOKENS_PER_S_AT_16).toFixed(2)}`,
);
console.log(`peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
await app.close();
engine.dispose();
