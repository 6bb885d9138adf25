/**
 * @module Proxy overhead bench: 64 concurrent clients against (a) the fake vLLM upstream directly and (b) the same
 * upstream through the capturing proxy (event recorded for every call). Prints added p50/p99 latency and the
 * throughput ratio. Targets: added p50 <= 1 ms, throughput >= 50% of direct.
 *
 * The upstream and the gateway each run in their own child process, so neither shares an event loop with the load
 * generator. This file is both the main script and the child (`BENCH_ROLE` set by the parent). The servers run
 * arclight's compiled build (`dist/`), as `arclight gateway` does: run `npm run build` after changing `src/` (the
 * bench refuses a build older than its source).
 *
 * A third server, the bare pass-through (node:http in, undici out, no capture, no auth, in its own process), is the
 * floor for "a Node process between agent and upstream": the gateway's CPU per call is printed against it
 * (target: within 2×). A fourth, the bare pass-through with durable capture, adds to it only what capture needs:
 * both bodies parsed, one `model_request` event per call (the request and answer texts spliced into its JSON) appended
 * to the gateway's SQLite store and committed before the agent is answered: the floor for a capturing proxy built on
 * these libraries. A fifth, the Fastify floor, does the floor's work as the one route of a Fastify app configured as
 * the gateway configures Fastify (logger, request ids, JSON parser): what the framework adds before any of arclight's
 * own proxy work. Direct, bare, bare + capture, Fastify floor and proxied runs alternate for `--rounds N` rounds
 * (default 3); figures are medians over the rounds.
 *
 * `--gateway app` (default): the gateway as `arclight gateway` runs it (default configuration, request logging at
 * `info`, metrics), its clients presenting agent tokens as controllers give them; `--gateway harness`: the proxy
 * test harness (no logging or metrics, the admin key). `--gateway-config JSON`:
 * gateway configuration keys for `app` (e.g. `'{"log_level":"warn"}'`).
 * `--store sqlite` (default; the gateway's real default, a fresh file in a temp folder) or `--store memory`;
 * `--body small` (default) or `--body large` (a 24-turn, ~24 kB chat body).
 * `--rate N`: open loop, N calls/s offered to every kind (at most 64 in flight), so that the servers' CPU per call is
 * compared at the same throughput; the default is the closed loop (each client sends when answered, each kind as fast
 * as it goes). `--profile DIR`: after the rounds, one more round in which the bare pass-through, the floor, the
 * Fastify floor and the gateway each profile themselves; the profiles are written to DIR and a table of profiled µs
 * per call by owner (`profiling/cpu-profile.ts`) shows where the gateway's CPU beyond the Fastify floor goes.
 * `--paired N`: the four servers served at the same time, each offered N calls/s, their
 * CPU read over the same window, after a warm-up round: the ratios sequential runs print move with the machine's speed
 * (up to 2× between runs minutes apart here); paired ones do not (see `comparePaired`). The ratios grow with N, so
 * compare them at one rate. `BENCH_DURATION_MS`: each run's measured time (default 5000).
 */

import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Agent } from "undici";
import { makeDirs } from "../src/fs/make-dirs.js";
import {
  attribute,
  type CpuProfile,
  type ProfiledServer,
  ProfileSwitch,
  perCallTable,
} from "./profiling/cpu-profile.js";

const CONCURRENCY = 64;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const WARMUP_MS = 1000;
/** Open loop: a call sent this much after it was due counts as late (the schedule ticks every 1 ms). */
const LATE_MS = 5;
/** The agent's request: `--body small` (default) one short message; `--body large` a 24-turn chat of about 24 kB. */
function requestBody(): string {
  const i = process.argv.indexOf("--body");
  const size = i === -1 ? "small" : process.argv[i + 1];
  if (size === "small") {
    return JSON.stringify({ model: "agent", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
  }
  if (size !== "large") throw new Error(`--body must be small or large, got ${size}`);
  const turn = "The quick brown fox jumps over the lazy dog; ".repeat(22);
  const messages = Array.from({ length: 24 }, (_, k) => ({ role: k % 2 ? "assistant" : "user", content: turn }));
  return JSON.stringify({ model: "agent", messages, max_tokens: 4, seed: 7, top_p: 0.95 });
}
/** The agent's request body, set by `main` from `--body` (after the flags are checked). */
let BODY = "";
/**
 * What the gateway sends upstream for {@link BODY}: the agent's text with its fields spliced in (model name,
 * temperature, `return_token_ids`, `logprobs`), made by the gateway's own rewrite. The load generator sends it to the
 * upstream directly and through the pass-throughs, so the upstream answers every path alike (with the token ids and
 * log-probabilities the gateway asks for); set by `main`.
 */
let UPSTREAM_BODY = "";

/**
 * @param gatewayConfigJson - `--gateway-config` (the model name, key and port are the bench's)
 * @returns the body the gateway sends upstream for {@link BODY} on a train-mode chat call
 */
async function upstreamBody(gatewayConfigJson: string): Promise<string> {
  const { rewriteRequestBody } = await built<typeof import("../src/gateway/proxy/call-request.js")>(
    "gateway/proxy/call-request.js",
  );
  const { gatewayConfig, proxyOptionsOf } = await built<typeof import("../src/gateway/config.js")>("gateway/config.js");
  const extra = JSON.parse(gatewayConfigJson) as Record<string, unknown>;
  const config = gatewayConfig({ ...extra, key: "bench-admin-key", model_name: "policy", port: 0 });
  const agentBody = { text: BODY, value: JSON.parse(BODY) as Record<string, unknown> };
  return rewriteRequestBody("chat", agentBody, "train", proxyOptionsOf(config)).text;
}

/**
 * Imports an arclight module from the compiled build (`dist/`, made by `npm ci` or `npm run build`), as
 * `arclight gateway` runs it, typed from its source. The servers run the build, not the source through tsx: tsx's
 * compiled code names every function it creates (esbuild's `keepNames`), a cost per closure the build does not have
 * (about 4% of the gateway's CPU per call). {@link checkBuild} makes sure the build is not older than the source.
 * @param path - the module's path under `src/` and `dist/`, `.js`
 */
function built<T>(path: string): Promise<T> {
  return import(new URL(`../dist/${path}`, import.meta.url).href) as Promise<T>;
}

/**
 * @throws {Error} naming the first source file under `src/` (tests and test helpers aside) whose compiled file in
 *   `dist/` is missing or older, and saying to run `npm run build`
 */
function checkBuild(): void {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const sources = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" }).filter(
    (f) => f.endsWith(".ts") && !f.endsWith(".d.ts") && !/\.(test|contract)\.ts$/.test(f) && !/(^|\/)testing\//.test(f),
  );
  for (const source of sources) {
    const compiled = join(root, "dist", source.replace(/\.ts$/, ".js"));
    let builtMs: number;
    try {
      builtMs = statSync(compiled).mtimeMs;
    } catch {
      throw new Error(`dist/ has no build of src/${source}: run \`npm run build\` (the servers run the build)`);
    }
    if (statSync(join(root, "src", source)).mtimeMs > builtMs) {
      throw new Error(`src/${source} changed after the last build: run \`npm run build\` (the servers run the build)`);
    }
  }
}

async function runWorker(): Promise<void> {
  const { FakeVllm } = await import("../src/gateway/testing/fake-vllm.js");
  const role = process.env.BENCH_ROLE as "upstream" | "gateway" | "bare" | "capture" | "framework";
  const send = (message: unknown): void => void process.send!(message);
  // Stopped by the parent or a Ctrl-C: exit through the exit handlers (the capture store removes its temp folder).
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(0));
  // The bench killed outright (SIGKILL) can stop nobody: its IPC channel closing is the sign to go.
  process.once("disconnect", () => process.exit(0));
  if (role === "bare" || role === "capture") return runBarePassThrough(send, role === "capture");
  if (role === "framework") return runFastifyFloor(send);
  if (role === "upstream") {
    const fake = await FakeVllm.start({ content: "ok" });
    // Keep the fake's memory flat: the bench does not need the received bodies.
    setInterval(() => fake.received.splice(0), 200).unref();
    send({ url: fake.url });
    process.on("message", (message) => {
      if (message === "exit") process.exit(0);
      send({ cpu: process.cpuUsage() });
    });
    return;
  }
  const dbPath = process.env.BENCH_SQLITE_PATH;
  // The harness (a test module, not built) runs from source with its store; the app gateway from the build.
  const { SqliteStore } =
    process.env.BENCH_GATEWAY === "harness"
      ? await import("../src/store/sqlite.js")
      : await built<typeof import("../src/store/sqlite.js")>("store/sqlite.js");
  const store = dbPath ? SqliteStore.open(dbPath) : undefined;
  const storeName = dbPath ? `sqlite (SqliteStore, WAL, synchronous=NORMAL, ${dbPath})` : "memory (MemoryStore)";
  const models = [{ model: "policy", endpoint: process.env.BENCH_UPSTREAM_URL! }];
  const gateway =
    process.env.BENCH_GATEWAY === "harness"
      ? await startHarnessGateway(models, store)
      : await startAppGateway(models, store);
  send({ ...gateway.info, store: storeName });
  process.on("message", async (message) => {
    if (message === "exit") process.exit(0);
    else if (await profileMessage(message, send)) return;
    else if (message === "cpu") send({ cpu: process.cpuUsage() });
    else send({ events: await gateway.store.countEvents() });
  });
}

/** What the gateway worker tells the parent: the OpenAI base URL (`ROLLOUT` in place of the id) and each client's key. */
interface GatewayInfo {
  base: string;
  rids: string[];
  /** The key client `i` presents: its rollout's agent token (`app`), or the admin key (`harness`). */
  keys: string[];
}

type BenchStore = import("../src/store/store.js").Store;

/**
 * `--gateway app` (default): the gateway as `arclight gateway` runs it (`buildApp` with the default configuration but
 * for the model name, logging at the default level `info`, batched as `arclight gateway` does, into /dev/null), each client presenting its rollout's agent
 * token as a controller gives it (`AGL_KEY`).
 */
async function startAppGateway(
  models: { model: string; endpoint: string }[],
  sqlite: BenchStore | undefined,
): Promise<{ info: GatewayInfo; store: BenchStore }> {
  const { gatewayLogger } = await built<typeof import("../src/gateway/logger.js")>("gateway/logger.js");
  const { buildApp } = await built<typeof import("../src/gateway/app.js")>("gateway/app.js");
  const { gatewayConfig } = await built<typeof import("../src/gateway/config.js")>("gateway/config.js");
  const { MemoryStore } = await built<typeof import("../src/store/memory.js")>("store/memory.js");
  const { currentAttemptOf, RolloutCreateSchema } =
    await built<typeof import("../src/protocol/index.js")>("protocol/index.js");
  const { agentKeyFor } = await built<typeof import("../src/controller/agent-credentials.js")>(
    "controller/agent-credentials.js",
  );
  const store = sqlite ?? new MemoryStore();
  const extra = JSON.parse(process.env.BENCH_GATEWAY_CONFIG ?? "{}") as Record<string, unknown>;
  const config = gatewayConfig({ ...extra, key: "bench-admin-key", model_name: "policy", port: 0 });
  await store.upsertModels(models.map((m) => ({ version: 0, ...m })));
  const creates = Array.from({ length: CONCURRENCY }, (_, i) =>
    RolloutCreateSchema.parse({ rollout_id: `ro-bench-${i}`, input: {} }),
  );
  const rollouts = await store.createRollouts(creates);
  const logger = gatewayLogger(config.log_level, "/dev/null");
  const app = buildApp({ store, config, logger });
  const baseUrl = await app.listen({ host: "127.0.0.1", port: 0 });
  const keys = rollouts.map((rollout) => agentKeyFor(config.key, rollout, currentAttemptOf(rollout.status)));
  const rids = rollouts.map((r) => r.rollout_id);
  return { info: { base: `${baseUrl}/proxy/rollout/ROLLOUT/attempt/0/mode/train/openai/v1`, rids, keys }, store };
}

/**
 * `--gateway harness`: the proxy test harness (`proxy-harness.ts`: the proxy plugin with the error handler, auth and
 * access hooks, no logging, no metrics), every client presenting the admin key.
 */
async function startHarnessGateway(
  models: { model: string; endpoint: string }[],
  store: BenchStore | undefined,
): Promise<{ info: GatewayInfo; store: BenchStore }> {
  const { startProxyHarness } = await import("../src/gateway/testing/proxy-harness.js");
  const h = await startProxyHarness({ models, ...(store ? { store } : {}) });
  const rids = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => h.newRollout(`ro-bench-${i}`)));
  return { info: { base: h.openaiBase("ROLLOUT"), rids, keys: rids.map(() => h.key) }, store: h.store };
}

/** Sends one agent request to the upstream; @returns the upstream's status and body. */
type Forward = (requestBody: string | Buffer, rolloutId: string, parsed?: unknown) => Promise<UpstreamAnswer>;

interface UpstreamAnswer {
  status: number;
  body: Buffer;
}

/**
 * What the bare pass-through does with a request body: sends it to the upstream's chat route with undici (keep-alive
 * pool) and reads the answer. With `capture`, also what durable capture needs and nothing more: parses the request
 * (unless given `parsed`, what a framework's body parser already made of it) and the answer, and appends one
 * `model_request` event (request and response texts spliced into the event's JSON, as the gateway does) for the
 * rollout to a fresh SQLite store with the gateway's store class, resolving only once the event is committed.
 */
async function passThrough(capture: boolean): Promise<Forward> {
  const target = new URL(`${process.env.BENCH_UPSTREAM_URL!}/chat/completions`);
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  const store = capture ? await captureStore() : undefined;
  return async (requestBody, rolloutId, parsed) => {
    const startedAt = performance.now();
    const upstream = await agent.request({
      origin: target.origin,
      path: target.pathname,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: requestBody,
    });
    const body = Buffer.from(await upstream.body.arrayBuffer());
    if (store) {
      const requestText = typeof requestBody === "string" ? requestBody : requestBody.toString("utf8");
      const responseText = body.toString("utf8");
      const request = (parsed ?? JSON.parse(requestText)) as Record<string, unknown>;
      const response = JSON.parse(responseText) as Record<string, unknown>;
      const latencyMs = performance.now() - startedAt;
      const data = { request, response, latency_ms: latencyMs, http_status: upstream.statusCode };
      const dataJson = `{"request":${requestText},"response":${responseText},"latency_ms":${latencyMs},"http_status":${upstream.statusCode}}`;
      await store.appendEvents(rolloutId, "0", [{ event_type: "model_request", data, dataJson }]);
    }
    return { status: upstream.statusCode, body };
  };
}

/**
 * The bare pass-through: node:http in, {@link passThrough} out, the upstream's status and body back. Nothing else:
 * no auth, no routing. With `capture` (the floor), the event is committed before the answer; the client names its
 * rollout in an `x-bench-rollout` header.
 */
async function runBarePassThrough(send: (message: unknown) => void, capture: boolean): Promise<void> {
  const { createServer } = await import("node:http");
  const forward = await passThrough(capture);
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const { status, body } = await forward(Buffer.concat(chunks), String(req.headers["x-bench-rollout"]));
    res.writeHead(status, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  send({ url: `http://127.0.0.1:${port}` });
  answerParent(send);
}

/**
 * The Fastify floor: the floor's work ({@link passThrough} with capture) as the handler of one route at the gateway's
 * chat path, in Fastify configured as `buildApp` configures it: its logger (info, batched, into /dev/null) with one
 * line per request, request ids, body limit, router options, server timeouts and the JSON parser that keeps the
 * body's text. None of arclight's own proxy work: no auth, pause or attempt checks, metrics, retries, aborts, rewriting
 * or lookups. Its CPU per call is what a capturing proxy costs in this framework before any of that.
 */
async function runFastifyFloor(send: (message: unknown) => void): Promise<void> {
  const { default: Fastify } = await import("fastify");
  const { gatewayLogger } = await built<typeof import("../src/gateway/logger.js")>("gateway/logger.js");
  const { gatewayConfig } = await built<typeof import("../src/gateway/config.js")>("gateway/config.js");
  const { GatewayLogController, requestId } =
    await built<typeof import("../src/gateway/request-log.js")>("gateway/request-log.js");
  const { installJsonParser } = await built<typeof import("../src/gateway/json-body.js")>("gateway/json-body.js");
  const { serverTimeoutOptions } =
    await built<typeof import("../src/http/server-timeouts.js")>("http/server-timeouts.js");
  const { MAX_PATH_PARAM_LENGTH } = await built<typeof import("../src/gateway/app.js")>("gateway/app.js");
  const config = gatewayConfig({ key: "bench-admin-key", model_name: "policy", port: 0 });
  const forward = await passThrough(true);
  const logger: import("fastify").FastifyBaseLogger = gatewayLogger(config.log_level, "/dev/null").child({
    component: "gateway",
  });
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: config.body_limit_bytes,
    genReqId: (req) => requestId(req.headers["x-request-id"]),
    logController: new GatewayLogController(),
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    ...serverTimeoutOptions(config.headers_timeout_seconds, config.request_timeout_seconds),
  });
  installJsonParser(app, true);
  app.post<{ Params: { rid: string } }>(
    "/proxy/rollout/:rid/attempt/:aid/mode/:mode/openai/v1/chat/completions",
    async (request, reply) => {
      const { text, value } = request.body as import("../src/gateway/json-body.js").JsonBodyText;
      const { status, body } = await forward(text, request.params.rid, value);
      return reply.code(status).header("content-type", "application/json").send(body);
    },
  );
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  send({ url });
  answerParent(send);
}

/** Answers the parent's messages to a pass-through: `exit`, profiling (see {@link profileMessage}), else its CPU. */
function answerParent(send: (message: unknown) => void): void {
  process.on("message", async (message) => {
    if (message === "exit") process.exit(0);
    if (!(await profileMessage(message, send))) send({ cpu: process.cpuUsage() });
  });
}

/**
 * A fresh SQLite store (the gateway's class and settings) in its own temp folder, with one rollout per client
 * (`ro-bench-{i}`) for the capturing pass-through; the folder is removed at exit.
 */
async function captureStore(): Promise<import("../src/store/store.js").Store> {
  const { SqliteStore } = await built<typeof import("../src/store/sqlite.js")>("store/sqlite.js");
  const { RolloutCreateSchema } = await built<typeof import("../src/protocol/index.js")>("protocol/index.js");
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-capture-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const store = SqliteStore.open(join(dir, "capture.db"));
  const creates = Array.from({ length: CONCURRENCY }, (_, i) =>
    RolloutCreateSchema.parse({ rollout_id: `ro-bench-${i}`, input: {} }),
  );
  await store.createRollouts(creates);
  return store;
}

const profiler = new ProfileSwitch();

/**
 * Answers the parent's profiling messages (`--profile`): `"profile-start"` starts this process's profiler,
 * `{ profileStop: path }` stops it and writes the profile to `path`.
 * @returns whether `message` was one of them
 */
async function profileMessage(message: unknown, send: (message: unknown) => void): Promise<boolean> {
  if (message === "profile-start") {
    await profiler.start().then(
      () => send({ profiling: true }),
      (err: unknown) => send({ profileError: (err as Error).message }),
    );
    return true;
  }
  const path = (message as { profileStop?: unknown } | null)?.profileStop;
  if (typeof path !== "string") return false;
  try {
    writeFileSync(path, JSON.stringify(await profiler.stop()));
    send({ profiled: path });
  } catch (err) {
    // The parent waits for an answer: a failure must be one too.
    send({ profileError: `${path}: ${(err as Error).message}` });
  }
  return true;
}

/** Every server process started, so `main` can stop them all whatever happens. */
const children: ChildProcess[] = [];

function startWorker(env: Record<string, string>): Promise<{ worker: ChildProcess; info: Record<string, unknown> }> {
  const worker = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, ...env },
  });
  children.push(worker);
  return new Promise((resolve, reject) => {
    const exited = (code: number | null, signal: NodeJS.Signals | null): void =>
      reject(
        new Error(
          `the ${env.BENCH_ROLE} server exited while starting (${signal ?? `code ${code}`}); its error is above`,
        ),
      );
    // A server that dies before it is up (an import that fails) would otherwise leave the bench waiting for ever.
    worker.once("exit", exited);
    worker.once("message", (info) => {
      worker.off("exit", exited);
      resolve({ worker, info: info as Record<string, unknown> });
    });
    worker.once("error", reject);
  });
}

/** Asks a worker for its `process.cpuUsage()`; @returns user + system CPU time, µs. */
async function cpuMicros(worker: ChildProcess): Promise<number> {
  worker.send("cpu");
  const { cpu } = await new Promise<{ cpu: NodeJS.CpuUsage }>((r) => worker.once("message", r));
  return cpu.user + cpu.system;
}

/** CPU time used so far by each process, µs. */
interface CpuSnapshot {
  loadgen: number;
  upstream: number;
  /** The server between the load generator and the upstream: the gateway or the bare pass-through. */
  middle: number;
}

/** One measured run with its CPU per call (warm-up included in both the time and the count), µs. */
interface MeasuredRun extends Run {
  cpu: CpuSnapshot;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const rate = (run: Run): number => run.requests / run.seconds;

/**
 * Median CPU per call of each process per kind of run, the throughput the machine's cores would allow if CPU were
 * the only limit (steadier than calls/s on a shared machine; docs/benchmarks.md, Proxy), and
 * the gateway's CPU per call against the bare pass-through's and against the bare pass-through with durable capture.
 */
function printCpu(runs: Record<"direct" | Middle, MeasuredRun[]>, openLoop: boolean): void {
  const per = (kind: keyof typeof runs, part: keyof CpuSnapshot): number => median(runs[kind].map((r) => r.cpu[part]));
  const us = (v: number): string => v.toFixed(0);
  const total = (kind: keyof typeof runs): number => per(kind, "loadgen") + per(kind, "upstream") + per(kind, "middle");
  const parts = (kind: keyof typeof runs, middle: string): string =>
    `load ${us(per(kind, "loadgen"))} + upstream ${us(per(kind, "upstream"))}` +
    (kind === "direct" ? "" : ` + ${middle} ${us(per(kind, "middle"))}`) +
    ` = ${us(total(kind))}`;
  console.log(
    `CPU per call, µs (medians): direct: ${parts("direct", "")}; bare pass-through: ${parts("bare", "bare")}; ` +
      `bare + capture: ${parts("capture", "bare + capture")}; Fastify floor: ${parts("framework", "Fastify floor")}; ` +
      `proxied: ${parts("proxied", "gateway")}`,
  );
  const cores = availableParallelism();
  const ceiling = (kind: keyof typeof runs): number => (cores * 1e6) / total(kind);
  const share = (kind: keyof typeof runs): string => ((ceiling(kind) / ceiling("direct")) * 100).toFixed(1);
  // Open loop: CPU per call at a rate below saturation, where calls batch less; no ceiling follows from it.
  if (!openLoop) {
    console.log(
      `CPU-bound ceiling on ${cores} cores: direct ${ceiling("direct").toFixed(0)} calls/s, bare ${ceiling("bare").toFixed(0)}, ` +
        `bare + capture ${ceiling("capture").toFixed(0)}, Fastify floor ${ceiling("framework").toFixed(0)}, ` +
        `proxied ${ceiling("proxied").toFixed(0)} (of direct: bare ${share("bare")}%, bare + capture ` +
        `${share("capture")}%, Fastify floor ${share("framework")}%, proxied ${share("proxied")}%)`,
    );
  }
  const gateway = per("proxied", "middle");
  const bare = per("bare", "middle");
  const floor = per("capture", "middle");
  const framework = per("framework", "middle");
  console.log(
    `gateway CPU per call ${us(gateway)} µs vs bare pass-through ${us(bare)} µs: ${(gateway / bare).toFixed(2)}× (target <= 2×)`,
  );
  console.log(
    `bare + durable capture ${us(floor)} µs: ${(floor / bare).toFixed(2)}× bare; the gateway is ${(gateway / floor).toFixed(2)}× ` +
      `of it (what the gateway does beyond durable capture: Fastify, auth, routing, pause and attempt checks, ` +
      `retries, aborts, logging, metrics; ${us(gateway - floor)} µs; --profile DIR shows where)`,
  );
  console.log(
    `Fastify floor (the floor inside Fastify as the gateway configures it) ${us(framework)} µs: ` +
      `${(framework / bare).toFixed(2)}× bare; the gateway is ${(gateway / framework).toFixed(2)}× of it ` +
      `(arclight's own proxy work: ${us(gateway - framework)} µs)`,
  );
}

interface Run {
  latenciesMs: number[];
  requests: number;
  /** Every call answered, warm-up included. */
  allRequests: number;
  seconds: number;
  /**
   * Open loop (`--rate`): measured calls sent more than {@link LATE_MS} after they were due (`concurrency` calls were
   * in flight, or the load generator itself fell behind its schedule).
   */
  late: number;
  /** Open loop: calls of the schedule not sent by its end (the server fell that far behind). */
  unsent: number;
}

/**
 * Closed loop (`rate` absent): `concurrency` clients, each sending its next call when the previous one is answered,
 * for the bench duration. Open loop (`rate` calls/s): calls are sent on a fixed schedule whatever the answers, client
 * after client, at most `concurrency` in flight; a call due while that many are in flight waits (see {@link Run.late}).
 */
async function load(target: Target, concurrency = CONCURRENCY, rate?: number): Promise<Run> {
  if (rate !== undefined) return openLoad(target, concurrency, rate);
  const { url: urlOf, headers: headersOf, body } = target;
  const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
  const latenciesMs: number[] = [];
  let measuring = false;
  let requests = 0;
  let allRequests = 0;
  const call = async (client: number): Promise<void> => {
    const started = performance.now();
    const res = await dispatcher.request({
      origin: new URL(urlOf(client)).origin,
      path: new URL(urlOf(client)).pathname,
      method: "POST",
      headers: { "content-type": "application/json", ...headersOf(client) },
      body,
    });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`a call to ${urlOf(client)} answered ${res.statusCode}`);
    allRequests++;
    if (measuring) {
      latenciesMs.push(performance.now() - started);
      requests++;
    }
  };
  let stop = false;
  let failure: unknown;
  let failed: () => void = () => {};
  const failedSoon = new Promise<void>((resolve) => {
    failed = resolve;
  });
  const clients = Array.from({ length: concurrency }, async (_, client) => {
    try {
      while (!stop) await call(client);
    } catch (err) {
      failure ??= err;
      stop = true;
      failed();
    }
  });
  const wait = (ms: number): Promise<void> => Promise.race([new Promise<void>((r) => setTimeout(r, ms)), failedSoon]);
  await wait(WARMUP_MS);
  measuring = true;
  const t0 = performance.now();
  await wait(DURATION_MS);
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(clients);
  await dispatcher.close();
  if (failure !== undefined) throw failure;
  return { latenciesMs, requests, allRequests, seconds, late: 0, unsent: 0 };
}

/**
 * The open-loop half of {@link load}: `rate` calls/s on a schedule (call k is due k/rate s after the start), at most
 * `concurrency` in flight. The calls due in the measured window (after the warm-up) are the measured ones, each timed
 * from when it was due; the run's calls/s is the measured calls answered over the time from the window's start to the
 * last answer (below `rate` when the server falls behind). Nothing is sent after the schedule's end: calls not sent by
 * then are counted as unsent, so a rate the server cannot keep up with still ends on time.
 */
async function openLoad(target: Target, concurrency: number, rate: number, warmUp = false): Promise<Run> {
  const { url: urlOf, headers: headersOf, body } = target;
  const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
  const targets = Array.from({ length: concurrency }, (_, c) => {
    const url = new URL(urlOf(c));
    return { origin: url.origin, path: url.pathname, headers: { "content-type": "application/json", ...headersOf(c) } };
  });
  const t0 = performance.now();
  const dueAt = (k: number): number => t0 + (k / rate) * 1000;
  const firstMeasured = Math.ceil((WARMUP_MS / 1000) * rate);
  const total = Math.ceil(((WARMUP_MS + DURATION_MS) / 1000) * rate);
  const endAt = t0 + WARMUP_MS + DURATION_MS;
  const latenciesMs: number[] = [];
  let allRequests = 0;
  let lastAnswerAt = 0;
  let late = 0;
  let inflight = 0;
  let sent = 0;
  let failure: unknown;
  const pending = new Set<Promise<void>>();
  const call = async (k: number): Promise<void> => {
    const res = await dispatcher.request({ ...targets[k % concurrency]!, method: "POST", body });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`a call to ${urlOf(k % concurrency)} answered ${res.statusCode}`);
    allRequests++;
    if (k >= firstMeasured) {
      lastAnswerAt = performance.now();
      // From when the call was due, not when it went out: a late call's wait is part of its latency.
      latenciesMs.push(lastAnswerAt - dueAt(k));
    }
  };
  // A call due just before the end still gets the grace a late call has.
  while (failure === undefined && sent < total && performance.now() < endAt + LATE_MS) {
    // Calls 0..due-1 are due by now (call k at k/rate s).
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    while (sent < due && inflight < concurrency) {
      const k = sent++;
      if (k >= firstMeasured && performance.now() - dueAt(k) > LATE_MS) late++;
      inflight++;
      const p: Promise<void> = call(k)
        .catch((err: unknown) => {
          failure ??= err;
        })
        .finally(() => {
          inflight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await new Promise<void>((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  await dispatcher.close();
  if (failure !== undefined) throw failure;
  // A warm-up round (paired runs) may fall behind: it is not counted, and the next round shows whether the warm
  // servers keep up.
  if (latenciesMs.length === 0 && !warmUp) {
    throw new Error(
      `at ${rate} calls/s it was sent ${sent} of the schedule's ${total} calls, none of them after the warm-up: ` +
        `it cannot take this rate on this machine now (load average ${loadavg()[0]!.toFixed(2)}); give a lower one`,
    );
  }
  // The window is the schedule's measured part, or longer when the answers came after its end.
  const seconds = (Math.max(lastAnswerAt, endAt) - dueAt(firstMeasured)) / 1000;
  return { latenciesMs, requests: latenciesMs.length, allRequests, seconds, late, unsent: total - sent };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The `--store` flag: `sqlite` (default) or `memory`. */
function storeFlag(): "sqlite" | "memory" {
  const i = process.argv.indexOf("--store");
  const value = i === -1 ? "sqlite" : process.argv[i + 1];
  if (value !== "sqlite" && value !== "memory") throw new Error(`--store must be sqlite or memory, got ${value}`);
  return value;
}

/** The `--gateway` flag: `app` (default, the gateway as `arclight gateway` runs it) or `harness`. */
function gatewayFlag(): "app" | "harness" {
  const i = process.argv.indexOf("--gateway");
  const value = i === -1 ? "app" : process.argv[i + 1];
  if (value !== "app" && value !== "harness") throw new Error(`--gateway must be app or harness, got ${value}`);
  return value;
}

const FLAGS = new Set([
  "--store",
  "--body",
  "--rounds",
  "--gateway",
  "--gateway-config",
  "--rate",
  "--paired",
  "--profile",
]);

/**
 * The `--gateway-config` flag: gateway configuration keys as a JSON object (`--gateway app` only), e.g.
 * `'{"log_level":"warn"}'` to measure what a setting costs; the key, model name and port stay the bench's.
 * @throws {Error} not a JSON object, or a key or value the gateway's configuration refuses
 */
async function gatewayConfigFlag(): Promise<string> {
  const i = process.argv.indexOf("--gateway-config");
  if (i === -1) return "{}";
  const text = process.argv[i + 1]!;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`--gateway-config must be a JSON object, got ${text}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`--gateway-config must be a JSON object, got ${text}`);
  }
  const { GatewayConfigSchema } = await import("../src/gateway/config.js");
  const checked = GatewayConfigSchema.safeParse(value);
  const has = (key: string): boolean => Object.hasOwn(value as object, key);
  const ours = ["key", "model_name", "port", "host", "store"].filter(has);
  if (ours.length > 0)
    throw new Error(
      `--gateway-config: ${ours.join(", ")}: key, model_name, port, host and store are the bench's (--store picks the store)`,
    );
  if (!checked.success)
    throw new Error(
      `--gateway-config: ${checked.error.issues.map((e) => (e.path.length ? `${e.path.join(".")}: ` : "") + e.message).join("; ")}`,
    );
  return text;
}

/** Every argument is one of {@link FLAGS} followed by its value. @throws {Error} naming the first one that is not */
function checkArgs(args: readonly string[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i]!;
    if (!FLAGS.has(flag))
      throw new Error(`unknown argument ${flag} (flags: ${[...FLAGS].join(", ")}, each with a value)`);
    if (seen.has(flag)) throw new Error(`${flag} given twice`);
    seen.add(flag);
    const value = args[i + 1];
    if (value === undefined || FLAGS.has(value)) throw new Error(`${flag} needs a value`);
  }
  if (seen.has("--rate") && seen.has("--paired"))
    throw new Error("--paired RATE sets the rate: give --rate or --paired");
  if (seen.has("--gateway-config") && args[args.indexOf("--gateway") + 1] === "harness") {
    throw new Error("--gateway-config applies to --gateway app only");
  }
}

/** What `--help` prints. */
const USAGE = `usage: npx tsx bench/proxy.ts [FLAG VALUE ...]   (or npm run bench -- proxy [FLAG VALUE ...]; run npm run build first)
  --rounds N            rounds of every kind, figures are medians (default 3)
  --rate N              open loop: N calls/s offered to every kind (default: closed loop, 64 clients)
  --paired N            the servers served at the same time, N calls/s each, CPU read over one window
  --store sqlite|memory the gateway's store (default sqlite, a fresh file)
  --body small|large    the chat body (default small; large: 24 turns, ~24 kB)
  --gateway app|harness the gateway as arclight gateway runs it (default), or the proxy test harness
  --gateway-config JSON gateway configuration keys for --gateway app, e.g. '{"log_level":"warn"}'
  --profile DIR         one more round with every server profiling itself; profiles and a table in DIR
env BENCH_DURATION_MS   each run's measured time, ms (default 5000)`;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return;
  }
  // Every flag is checked before any server starts: a bad one leaves no child process behind.
  checkArgs(args);
  if (!Number.isInteger(DURATION_MS) || DURATION_MS < 100) {
    throw new Error(
      `BENCH_DURATION_MS must be a whole number of ms, at least 100, got "${process.env.BENCH_DURATION_MS}"`,
    );
  }
  const storeKind = storeFlag();
  const rounds = roundsFlag();
  const paired = flagValue("--paired") !== undefined;
  const callRate = rateFlag(paired ? "--paired" : "--rate");
  const profileDir = flagValue("--profile");
  BODY = requestBody();
  process.env.BENCH_GATEWAY = gatewayFlag();
  process.env.BENCH_GATEWAY_CONFIG = await gatewayConfigFlag();
  // Every flag's value is checked first (a bad one is named even in a tree whose build is stale), then the build.
  checkBuild();
  UPSTREAM_BODY = await upstreamBody(process.env.BENCH_GATEWAY_CONFIG);
  // Before any server starts, and after every other check (a bad flag leaves no folder made): a folder that cannot be
  // made fails here, not after the measured rounds.
  if (profileDir !== undefined) checkProfileDir(profileDir);
  const dir = storeKind === "sqlite" ? mkdtempSync(join(tmpdir(), "arclight-bench-proxy-")) : undefined;
  // Ctrl-C or a kill: stop every server (each removes its own temp folder on the way out) and this run's folder.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      console.error(`bench/proxy: stopped by ${signal}; the servers are stopped and their temp folders removed`);
      for (const child of children) child.kill();
      if (dir) rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  }
  try {
    const storeEnv: Record<string, string> = dir ? { BENCH_SQLITE_PATH: join(dir, "gateway.db") } : {};
    if (paired) await comparePaired(storeEnv, rounds, callRate!, profileDir);
    else await compare(storeEnv, rounds, callRate, profileDir);
  } finally {
    // After a failure mid-run the servers are still up: stop them, so none is left behind.
    const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
    for (const child of running) child.kill();
    await Promise.all(running.map((child) => once(child, "exit")));
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The `--rate` (or `--paired`) flag: calls per second sent open-loop to every kind (see {@link load}), so that each
 * server's CPU per call is measured at the same throughput; absent: closed loop, each kind as fast as it goes.
 * @param flag - the flag that carries the rate
 */
function rateFlag(flag: "--rate" | "--paired"): number | undefined {
  const i = process.argv.indexOf(flag);
  if (i === -1) return undefined;
  const text = process.argv[i + 1]!;
  if (!/^[1-9]\d{0,5}$/.test(text))
    throw new Error(`${flag} must be a whole number of calls/s from 1 to 999999, got "${text}"`);
  return Number(text);
}

/**
 * Makes the `--profile` folder and checks that the four profiles can be written there (a file of one of their names
 * that is a folder, a folder not writable).
 * @throws {Error} naming the flag, the folder and the reason
 */
function checkProfileDir(dir: string): void {
  try {
    makeDirs(dir);
    for (const kind of MIDDLES) {
      const path = join(dir, `${kind}.cpuprofile`);
      writeFileSync(path, "");
      rmSync(path);
    }
  } catch (err) {
    throw new Error(`--profile: cannot write profiles in ${dir}: ${(err as Error).message}`);
  }
}

/** The value after `flag`, or undefined when the flag is absent (`checkArgs` has made sure it has one). */
function flagValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i === -1 ? undefined : process.argv[i + 1];
}

/**
 * Sends a worker a profiling message; @returns its answer
 * @throws {Error} the worker answered that profiling failed
 */
async function ask(worker: ChildProcess, message: unknown): Promise<unknown> {
  worker.send(message as string);
  const answer = await new Promise((resolve) => worker.once("message", resolve));
  const error = (answer as { profileError?: unknown }).profileError;
  if (typeof error === "string") throw new Error(`--profile: ${error}`);
  return answer;
}

type Middle = "bare" | "capture" | "framework" | "proxied";
/** The servers between the load generator and the upstream, in the order they are printed. */
const MIDDLES: readonly Middle[] = ["bare", "capture", "framework", "proxied"];
/** How the printed figures name each server. */
const SERVER_NAMES: Record<Middle, string> = {
  bare: "bare",
  capture: "floor",
  framework: "Fastify floor",
  proxied: "gateway",
};

/** The printed name of a server. */
function serverName(kind: Middle): string {
  return SERVER_NAMES[kind];
}

/**
 * `--profile DIR`: one more round of bare, bare + capture, Fastify floor and proxied runs, not counted in the figures
 * above, with each server profiling itself during its run (`profiling/cpu-profile.ts`); the profiles go to
 * `DIR/{bare,capture,framework,proxied}.cpuprofile` (DevTools opens them) and a table of profiled µs per call by owner
 * is printed, the gateway against the Fastify floor.
 */
async function profileRound(
  dir: string,
  kinds: Record<Middle, Kind>,
  callRate: number | undefined,
  paired = false,
): Promise<void> {
  const profileOne = async (kind: Middle, run: () => Promise<Run>): Promise<ProfiledServer> => {
    const { middle } = kinds[kind];
    await ask(middle, "profile-start");
    const { allRequests } = await run();
    const path = join(dir, `${kind}.cpuprofile`);
    await ask(middle, { profileStop: path });
    const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
    return { name: serverName(kind), time: attribute(profile), calls: allRequests };
  };
  const loadOf = (kind: Middle) => (): Promise<Run> => load(kinds[kind], CONCURRENCY, callRate);
  const servers: ProfiledServer[] = [];
  if (paired) servers.push(...(await Promise.all(MIDDLES.map((kind) => profileOne(kind, loadOf(kind))))));
  else for (const kind of MIDDLES) servers.push(await profileOne(kind, loadOf(kind)));
  console.log(
    `CPU profiles in ${dir} (one more round${paired ? ", the four served at the same time" : ""}, not in the ` +
      `figures above): profiled µs per call by owner, warm-up included; floor = bare + capture; Fastify = the floor in Fastify; diff = gateway − Fastify floor`,
  );
  for (const line of perCallTable(servers)) console.log(line);
}

/** The `--rounds` flag: how many rounds of direct / bare / bare + capture / Fastify floor / proxied runs (default 3). */
function roundsFlag(): number {
  const i = process.argv.indexOf("--rounds");
  if (i === -1) return 3;
  const text = process.argv[i + 1]!;
  if (!/^[1-9]\d{0,3}$/.test(text)) throw new Error(`--rounds must be a whole number from 1 to 9999, got "${text}"`);
  return Number(text);
}

/** Where the load generator sends: the URL, headers and body of client `c`'s calls. */
interface Target {
  url: (c: number) => string;
  headers: (c: number) => Record<string, string>;
  /** The request body: the agent's for the gateway, the body the gateway sends upstream for the others. */
  body: string;
}

/** One kind of run: the server measured (the gateway for `direct`: it idles) and how it is reached. */
interface Kind extends Target {
  middle: ChildProcess;
}

/** The upstream and the four servers between it and the load generator, each in its own process, and how the load generator reaches each. */
interface Servers {
  upstream: ChildProcess;
  upstreamUrl: string;
  gateway: ChildProcess;
  /** The gateway's store, in words. */
  store: string;
  kinds: Record<"direct" | Middle, Kind>;
  workers: ChildProcess[];
}

async function startServers(storeEnv: Record<string, string>): Promise<Servers> {
  const upstream = await startWorker({ BENCH_ROLE: "upstream" });
  const upstreamUrl = upstream.info.url as string;
  const gateway = await startWorker({ BENCH_ROLE: "gateway", BENCH_UPSTREAM_URL: upstreamUrl, ...storeEnv });
  const bare = await startWorker({ BENCH_ROLE: "bare", BENCH_UPSTREAM_URL: upstreamUrl });
  const capture = await startWorker({ BENCH_ROLE: "capture", BENCH_UPSTREAM_URL: upstreamUrl });
  const framework = await startWorker({ BENCH_ROLE: "framework", BENCH_UPSTREAM_URL: upstreamUrl });
  const { base, rids, keys, store } = gateway.info as unknown as GatewayInfo & { store: string };
  const none = (): Record<string, string> => ({});
  const kinds = {
    direct: {
      middle: gateway.worker,
      url: () => `${upstreamUrl}/chat/completions`,
      headers: none,
      body: UPSTREAM_BODY,
    },
    bare: {
      middle: bare.worker,
      url: () => `${bare.info.url as string}/chat/completions`,
      headers: none,
      body: UPSTREAM_BODY,
    },
    capture: {
      middle: capture.worker,
      url: () => `${capture.info.url as string}/chat/completions`,
      headers: (c: number) => ({ "x-bench-rollout": `ro-bench-${c}` }),
      body: UPSTREAM_BODY,
    },
    framework: {
      middle: framework.worker,
      url: (c: number): string =>
        `${framework.info.url as string}/proxy/rollout/ro-bench-${c}/attempt/0/mode/train/openai/v1/chat/completions`,
      headers: none,
      body: UPSTREAM_BODY,
    },
    proxied: {
      middle: gateway.worker,
      url: (c: number): string => `${base.replace("ROLLOUT", rids[c]!)}/chat/completions`,
      headers: (c: number): Record<string, string> => ({ authorization: `Bearer ${keys[c]!}` }),
      body: BODY,
    },
  };
  const workers = [upstream.worker, gateway.worker, bare.worker, capture.worker, framework.worker];
  return { upstream: upstream.worker, upstreamUrl, gateway: gateway.worker, store, kinds, workers };
}

/** Stops the servers and waits for the gateway to exit (it closes its store). */
async function stopServers(servers: Servers): Promise<void> {
  for (const worker of servers.workers) worker.send("exit");
  await once(servers.gateway, "exit");
}

/** The setup line's tail: store, body, Node. */
function setupTail(store: string): string {
  const config = process.env.BENCH_GATEWAY_CONFIG === "{}" ? "" : ` ${process.env.BENCH_GATEWAY_CONFIG}`;
  return (
    `gateway: ${process.env.BENCH_GATEWAY}${config}; store: ${store}; request body ${BODY.length} bytes (to the ` +
    `upstream and the pass-throughs: the gateway's upstream body, ${UPSTREAM_BODY.length} bytes); node ${process.version}`
  );
}

async function compare(
  storeEnv: Record<string, string>,
  rounds: number,
  callRate: number | undefined,
  profileDir: string | undefined,
): Promise<void> {
  const servers = await startServers(storeEnv);
  const { kinds } = servers;
  const upstream = { worker: servers.upstream };
  const gateway = { worker: servers.gateway };
  console.log(
    `setup: ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(2)}, ` +
      (callRate === undefined
        ? `${CONCURRENCY} concurrent clients, `
        : `open loop at ${callRate} calls/s (at most ${CONCURRENCY} in flight), `) +
      `${rounds} round${rounds === 1 ? "" : "s"} of direct / bare pass-through / bare + capture / Fastify floor / proxied runs of ${DURATION_MS} ms after ${WARMUP_MS} ms warm-up; ` +
      `non-stream chat calls; upstream, gateway, bare pass-through, floor, Fastify floor and load generator in separate processes; ` +
      setupTail(servers.store),
  );
  const runs: Record<keyof typeof kinds, MeasuredRun[]> = {
    direct: [],
    bare: [],
    capture: [],
    framework: [],
    proxied: [],
  };
  for (let round = 0; round < rounds; round++)
    for (const [kind, target] of Object.entries(kinds) as [keyof typeof kinds, (typeof kinds)["direct"]][]) {
      const snapshot = async (): Promise<CpuSnapshot> => ({
        loadgen: process.cpuUsage().user + process.cpuUsage().system,
        upstream: await cpuMicros(upstream.worker),
        middle: kind === "direct" ? 0 : await cpuMicros(target.middle),
      });
      const before = await snapshot();
      const run = await load(target, CONCURRENCY, callRate).catch((err: unknown) => {
        throw new Error(`round ${round + 1}, ${kind}: ${(err as Error).message}`);
      });
      const after = await snapshot();
      const cpu = {
        loadgen: (after.loadgen - before.loadgen) / run.allRequests,
        upstream: (after.upstream - before.upstream) / run.allRequests,
        middle: (after.middle - before.middle) / run.allRequests,
      };
      runs[kind].push({ ...run, cpu });
    }
  // Same pair with one client: the proxy's own cost, without queueing behind 63 other calls.
  const directOne = await load(kinds.direct, 1);
  const proxiedOne = await load(kinds.proxied, 1);
  gateway.worker.send("count");
  const { events } = await new Promise<{ events: number }>((r) => gateway.worker.once("message", r));
  const p = (kind: keyof typeof kinds, q: number): number =>
    median(runs[kind].map((r) => percentile(r.latenciesMs, q)));
  for (const kind of Object.keys(kinds) as (keyof typeof kinds)[])
    console.log(
      `${kind.padEnd(9)} p50 ${p(kind, 50).toFixed(3)} ms  p99 ${p(kind, 99).toFixed(3)} ms  ` +
        `${median(runs[kind].map(rate)).toFixed(0)} calls/s (medians; per round: ${runs[kind].map((r) => rate(r).toFixed(0)).join(", ")})` +
        (callRate === undefined
          ? ""
          : `; late: ${runs[kind].map((r) => r.late).join(", ")}; unsent: ${runs[kind].map((r) => r.unsent).join(", ")}`),
    );
  const row = (name: string, run: Run): string =>
    `${name.padEnd(9)} p50 ${percentile(run.latenciesMs, 50).toFixed(3)} ms  p99 ${percentile(run.latenciesMs, 99).toFixed(3)} ms  ` +
    `${rate(run).toFixed(0)} calls/s (${run.requests} calls)`;
  console.log(row("direct1", directOne));
  console.log(row("proxied1", proxiedOne));
  const addedOne = percentile(proxiedOne.latenciesMs, 50) - percentile(directOne.latenciesMs, 50);
  console.log(`added latency with 1 client: p50 ${addedOne.toFixed(3)} ms`);
  console.log(`events recorded by the gateway: ${events} (warm-up included)`);
  printCpu(runs, callRate !== undefined);
  const at = callRate === undefined ? `${CONCURRENCY} clients` : `${callRate} calls/s`;
  console.log(
    `added latency at ${at}: p50 ${(p("proxied", 50) - p("direct", 50)).toFixed(3)} ms (target <= 1 ms), ` +
      `p99 ${(p("proxied", 99) - p("direct", 99)).toFixed(3)} ms`,
  );
  const ratio = (kind: keyof typeof kinds): string =>
    ((median(runs[kind].map(rate)) / median(runs.direct.map(rate))) * 100).toFixed(1);
  if (callRate !== undefined) {
    console.log(`throughput: set by --rate (every kind was offered ${callRate} calls/s); see the closed-loop run`);
  } else {
    console.log(
      `throughput ratio proxied/direct: ${ratio("proxied")}% (target >= 50%); bare/direct: ${ratio("bare")}%; ` +
        `bare + capture/direct: ${ratio("capture")}%`,
    );
  }
  if (profileDir !== undefined) await profileRound(profileDir, kinds, callRate);
  await stopServers(servers);
}

/** The ratios a paired round prints: three servers against bare, the gateway against each floor. */
type RatioName = "gateway" | "floor" | "framework" | "ofFloor" | "ofFramework";

/** @param cpu - CPU per call of each server in one round, µs; @returns its {@link RatioName} ratios */
function pairedRatios(cpu: Record<Middle, number>): Record<RatioName, number> {
  return {
    gateway: cpu.proxied / cpu.bare,
    floor: cpu.capture / cpu.bare,
    framework: cpu.framework / cpu.bare,
    ofFloor: cpu.proxied / cpu.capture,
    ofFramework: cpu.proxied / cpu.framework,
  };
}

/**
 * `--paired RATE`: each round serves the bare pass-through, the floor and the gateway at the same time, each offered
 * RATE calls/s open-loop by its own clients, and reads their CPU over the same window. This machine's speed drifts
 * (the same server's CPU per call moved 2× between runs minutes apart), which sequential runs take for a difference
 * between servers; served side by side, the four see the same speed, so their ratio holds. Prints each round's CPU
 * per call and the medians of the per-round ratios.
 */
async function comparePaired(
  storeEnv: Record<string, string>,
  rounds: number,
  callRate: number,
  profileDir: string | undefined,
): Promise<void> {
  const servers = await startServers(storeEnv);
  const { kinds } = servers;
  console.log(
    `setup: ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(2)}, ${rounds} round` +
      `${rounds === 1 ? "" : "s"} of ${DURATION_MS} ms after ${WARMUP_MS} ms warm-up, in each the bare pass-through, ` +
      `bare + capture, the Fastify floor and the gateway served at the same time, each offered ${callRate} calls/s open-loop (at most ` +
      `${CONCURRENCY} in flight); non-stream chat calls; the floor always commits to its own SQLite file; ` +
      setupTail(servers.store),
  );
  // Round 0 warms the servers up together (JIT, pools, caches: a cold server's first seconds cost it several times its
  // later CPU per call) and is printed, not counted; it may fall behind without stopping the run.
  const ratios: Record<RatioName, number>[] = [];
  // Counted rounds in which a server left over 1% of its schedule unsent: it fell behind, so its figures are not at
  // the rate asked (the odd call past the schedule's last tick is not counted).
  const behind: string[] = [];
  const scheduled = Math.ceil(((WARMUP_MS + DURATION_MS) / 1000) * callRate);
  const p50 = (run: Run): string =>
    run.latenciesMs.length === 0 ? "none measured" : `${percentile(run.latenciesMs, 50).toFixed(3)} ms`;
  for (let round = 0; round <= rounds; round++) {
    const before = await Promise.all(MIDDLES.map((kind) => cpuMicros(kinds[kind].middle)));
    const runs = await Promise.all(
      MIDDLES.map((kind) =>
        openLoad(kinds[kind], CONCURRENCY, callRate, round === 0).catch((err: unknown) => {
          const where = round === 0 ? "the warm-up round" : `round ${round}`;
          const who = kind === "bare" ? "bare pass-through" : serverName(kind);
          throw new Error(`${where}, the ${who}: ${(err as Error).message}`);
        }),
      ),
    );
    const after = await Promise.all(MIDDLES.map((kind) => cpuMicros(kinds[kind].middle)));
    const cpu = Object.fromEntries(
      MIDDLES.map((kind, i) => [kind, (after[i]! - before[i]!) / runs[i]!.allRequests]),
    ) as Record<Middle, number>;
    const ratio = pairedRatios(cpu);
    if (round > 0) ratios.push(ratio);
    const fellBehind = MIDDLES.filter((_, i) => runs[i]!.unsent > scheduled / 100).map((kind) => serverName(kind));
    if (round > 0 && fellBehind.length > 0) behind.push(`round ${round} (${fellBehind.join(", ")})`);
    const each = (f: (run: Run) => string): string =>
      MIDDLES.map((kind, i) => `${serverName(kind)} ${f(runs[i]!)}`).join(", ");
    console.log(
      `${round === 0 ? "warm-up round, not counted" : `round ${round}`}: CPU per call over the round's ` +
        `${WARMUP_MS + DURATION_MS} ms (its ${WARMUP_MS} ms warm-up included), µs: ` +
        `${MIDDLES.map((kind) => `${serverName(kind)} ${cpu[kind].toFixed(0)}`).join(", ")}: ` +
        `gateway ${ratio.gateway.toFixed(2)}× bare, floor ${ratio.floor.toFixed(2)}× bare, Fastify floor ` +
        `${ratio.framework.toFixed(2)}× bare; p50: ${each(p50)}; late / unsent calls: ${each((r) => `${r.late} / ${r.unsent}`)}`,
    );
  }
  const med = (key: RatioName): string => median(ratios.map((r) => r[key])).toFixed(2);
  console.log(
    `gateway CPU per call vs bare pass-through at ${callRate} calls/s each, median of ${rounds} paired ` +
      `round${rounds === 1 ? "" : "s"}: ${med("gateway")}× (target <= 2×); floor (bare + durable capture): ` +
      `${med("floor")}× bare; Fastify floor (the floor inside Fastify as the gateway configures it): ` +
      `${med("framework")}× bare; gateway / floor: ${med("ofFloor")}×; gateway / Fastify floor: ` +
      `${med("ofFramework")}× (medians of the per-round ratios). The ratios grow with the rate (at a few calls/s each ` +
      "call's wake-ups, the same for every server, are most of its cost): compare them at one rate, one the servers " +
      "keep up with (late calls few, none unsent)",
  );
  if (behind.length > 0) {
    // The run still ends normally (profiles included), but says its figures are not valid and exits non-zero.
    console.log(
      `NOT VALID: servers fell behind ${callRate} calls/s (over 1% of a round's calls unsent) in ${behind.join("; ")}: ` +
        "the ratios above are not at the rate asked; rerun at a lower rate or on a quieter machine",
    );
    process.exitCode = 1;
  }
  if (profileDir !== undefined) await profileRound(profileDir, kinds, callRate, true);
  await stopServers(servers);
}

if (process.env.BENCH_ROLE === undefined) {
  await main().catch((err: unknown) => {
    console.error(`bench/proxy: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  });
} else await runWorker();
