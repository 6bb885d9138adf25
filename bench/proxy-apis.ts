/**
 * @module Per-API proxy cost bench: the same conversation (system prompt, a user question, one function tool) sent
 * through the capturing proxy as OpenAI chat completions, OpenAI Responses and Anthropic Messages, non-streamed and
 * streamed. Responses and Messages are translated to chat completions upstream, so the difference in gateway CPU per
 * call is the translation's cost. Target: translation adds at most 25% gateway CPU per call over chat.
 *
 * The fake vLLM upstream and the gateway (memory store, so the store does not dilute the ratio) each run in their own
 * child process; this process is the load generator. This file is both the main script and the children.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Agent } from "undici";

const CONCURRENCY = 16;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
/** Interleaved rounds; each API's figure is its median over the rounds (the machine is shared and noisy). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_MS = 500;
/** 40 generated tokens with the fake tokenizer: one SSE chunk each when streamed. */
const ANSWER = "The weather in Paris is sunny and warm!!";
const SYSTEM = "You are a helpful assistant. Use the tools when they help.";
const QUESTION = "What is the weather in Paris today?";
const PARAMETERS = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

/** The request body of each API for the same conversation. */
const BODIES: Record<string, { path: string; body: Record<string, unknown> }> = {
  chat: {
    path: "/openai/v1/chat/completions",
    body: {
      model: "policy",
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: QUESTION },
      ],
      tools: [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: PARAMETERS } }],
    },
  },
  responses: {
    path: "/openai/v1/responses",
    body: {
      model: "policy",
      instructions: SYSTEM,
      input: [{ role: "user", content: [{ type: "input_text", text: QUESTION }] }],
      tools: [{ type: "function", name: "get_weather", description: "Weather", parameters: PARAMETERS, strict: false }],
      store: false,
    },
  },
  messages: {
    path: "/anthropic/v1/messages",
    body: {
      model: "policy",
      max_tokens: 256,
      system: SYSTEM,
      messages: [{ role: "user", content: QUESTION }],
      tools: [{ name: "get_weather", description: "Weather", input_schema: PARAMETERS }],
    },
  },
};

async function runWorker(): Promise<void> {
  const { FakeVllm } = await import("../src/gateway/testing/fake-vllm.js");
  const { startProxyHarness } = await import("../src/gateway/testing/proxy-harness.js");
  const send = (message: unknown): void => void process.send!(message);
  const onMessage = (reply: () => Promise<unknown> | unknown) =>
    process.on("message", async (message) => {
      if (message === "exit") process.exit(0);
      send(await reply());
    });
  if (process.env.BENCH_ROLE === "upstream") {
    const fake = await FakeVllm.start({ content: ANSWER });
    setInterval(() => fake.received.splice(0), 200).unref();
    send({ url: fake.url });
    onMessage(() => ({ cpu: process.cpuUsage() }));
    return;
  }
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: process.env.BENCH_UPSTREAM_URL! }] });
  const rids = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => h.newRollout(`ro-bench-${i}`)));
  const prefix = h.openaiBase("ROLLOUT").replace(/\/openai\/v1$/, "");
  send({ prefix, rids, key: h.key });
  onMessage(() => ({ cpu: process.cpuUsage() }));
}

function startWorker(env: Record<string, string>): Promise<{ worker: ChildProcess; info: Record<string, unknown> }> {
  const worker = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    worker.once("message", (info) => resolve({ worker, info: info as Record<string, unknown> }));
    worker.once("error", reject);
  });
}

async function cpuMicros(worker: ChildProcess): Promise<number> {
  worker.send("cpu");
  const { cpu } = await new Promise<{ cpu: NodeJS.CpuUsage }>((r) => worker.once("message", r));
  return cpu.user + cpu.system;
}

/** `CONCURRENCY` clients, each sending its next call when the previous answer is read; @returns calls made */
async function load(
  urlOf: (client: number) => string,
  body: string,
  headers: Record<string, string>,
  durationMs = DURATION_MS + WARMUP_MS,
) {
  const dispatcher = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  let calls = 0;
  let stop = false;
  const clients = Array.from({ length: CONCURRENCY }, async (_, client) => {
    const url = new URL(urlOf(client));
    while (!stop) {
      const res = await dispatcher.request({
        origin: url.origin,
        path: url.pathname,
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${url.pathname}: status ${res.statusCode}`);
      calls++;
    }
  });
  const started = performance.now();
  await new Promise((r) => setTimeout(r, durationMs));
  stop = true;
  await Promise.all(clients);
  await dispatcher.close();
  return { calls, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const upstream = await startWorker({ BENCH_ROLE: "upstream" });
  const gateway = await startWorker({ BENCH_ROLE: "gateway", BENCH_UPSTREAM_URL: upstream.info.url as string });
  const { prefix, rids, key } = gateway.info as { prefix: string; rids: string[]; key: string };
  console.log(
    `setup: ${availableParallelism()} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, ${CONCURRENCY} concurrent clients, ${DURATION_MS + WARMUP_MS} ms per run, ${ROUNDS} interleaved ` +
      `rounds (median); gateway with a memory ` +
      `store; a ${ANSWER.length}-token answer; node ${process.version}`,
  );
  const runs = [false, true].flatMap((stream) =>
    Object.entries(BODIES).map(([api, { path, body }]) => ({
      name: `${api}${stream ? " stream" : ""}`,
      urlOf: (c: number) => `${prefix.replace("ROLLOUT", rids[c]!)}${path}`,
      text: JSON.stringify({ ...body, stream }),
    })),
  );
  const headers = { authorization: `Bearer ${key}` };
  for (const run of runs) await load(run.urlOf, run.text, headers, 1000); // JIT warm-up, not measured
  const samples = new Map<string, { micros: number; rate: number }[]>(runs.map((r) => [r.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const run of runs) {
      const before = await cpuMicros(gateway.worker);
      const { calls, seconds } = await load(run.urlOf, run.text, headers);
      const micros = ((await cpuMicros(gateway.worker)) - before) / calls;
      samples.get(run.name)!.push({ micros, rate: calls / seconds });
    }
  }
  const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const perCall: Record<string, number> = {};
  for (const { name } of runs) {
    const micros = median(samples.get(name)!.map((s) => s.micros));
    const rate = median(samples.get(name)!.map((s) => s.rate));
    perCall[name] = micros;
    const vsChat = perCall[name.endsWith("stream") ? "chat stream" : "chat"]!;
    console.log(
      `${name.padEnd(17)} gateway CPU ${micros.toFixed(0).padStart(5)} µs/call  ${rate.toFixed(0).padStart(5)} calls/s  ` +
        `vs chat ${((micros / vsChat - 1) * 100).toFixed(1)}%  (rounds: ${samples
          .get(name)!
          .map((s) => s.micros.toFixed(0))
          .join(", ")} µs)`,
    );
  }
  const worst = Math.max(
    ...["responses", "messages", "responses stream", "messages stream"].map(
      (name) => perCall[name]! / perCall[name.endsWith("stream") ? "chat stream" : "chat"]! - 1,
    ),
  );
  console.log(`largest translation overhead: ${(worst * 100).toFixed(1)}% gateway CPU per call (target <= 25%)`);
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  upstream.worker.send("exit");
  gateway.worker.send("exit");
  await once(gateway.worker, "exit");
}

if (process.env.BENCH_ROLE === undefined) await main();
else await runWorker();
