/**
 * @module The one place a training stack is assembled (engine, gateway child, engine server, local controller).
 * `close` stops them newest first, once, on success, error and interrupt alike.
 */
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { ControllerConfigSchema } from "../controller/config.js";
import { LocalController } from "../controller/reconcile.js";
import type { Engine } from "../engine/engine.js";
import { buildEngineServer } from "../engine/server/app.js";
import { GatewayClient } from "../gateway/client.js";
import type { GatewayUnreachable } from "../gateway/client-errors.js";
import { agentModelName, type TrainedPolicy } from "../trainer/policies.js";
import { collocatedServing, type PolicyServing, remoteServing } from "../trainer/serving.js";
import { type FrozenOptions, startFrozenServing } from "./frozen-serving.js";
import { startGatewayChild } from "./gateway-child.js";
import { type VllmSampler, vllmSamplerServing } from "./managed-vllm.js";

/** A gateway already running: its URL and API key. */
export interface RunningGateway {
  url: string;
  key: string;
}

/** The local controller to start. */
export interface StackControllerOptions {
  /** Agent processes at once. */
  poolSize: number;
  /** More controller config keys (snake_case, as in the YAML), e.g. `{ poll_interval_seconds: 0.05, cwd }`. */
  settings?: Record<string, unknown>;
  /** Environment the agents inherit; default this process's. */
  baseEnv?: Readonly<Record<string, string | undefined>>;
}

/** What to start. */
export interface StackOptions {
  /** runs/NAME: gateway.db, controller-state.json and (with `engineUrl`) weights/ go here. */
  runDir: string;
  /** Model name the gateway proxy serves and the engine server answers as. */
  modelName: string;
  /** Builds the engine, first: a bad engine setting is refused before anything else starts. Disposed last. */
  engine: () => Promise<Engine>;
  /** Use a running gateway; omitted: start `arclight gateway` as a child on runDir/gateway.db. */
  gateway?: RunningGateway;
  /** More `arclight gateway` flags for the child, e.g. `["--val-temperature", "0"]`. */
  gatewayArgs?: readonly string[];
  /** API key the gateway child's proxy sends upstream (`ARCLIGHT_UPSTREAM_KEY`); omitted or null: none. */
  upstreamKey?: string | null;
  /** Serve frozen agents a second engine with the starting weights (`frozen-serving.ts`); omitted: none. */
  frozen?: FrozenOptions;
  /**
   * A policy per agent (`agents.policy: per_agent`): each agent's engine, served beside the base weights by the
   * engine server or vLLM; excludes `frozen` and `engineUrl`. Omitted: `engine` is the one policy.
   */
  perAgent?: PerAgentOptions;
  /** A running engine server's `/v1` URL to publish weights to; omitted: serve the engine from this process. */
  engineUrl?: string;
  /**
   * vLLM as the sampler: the user's servers or replicas started here (`managed-vllm.ts`); each update's adapter or full
   * weights are loaded into them; `sleep` when collocated. Excludes `engineUrl`.
   */
  vllm?: VllmSampler;
  /** Admin key of the `engineUrl` server (sent on `/v1/load_weights`); default none. */
  engineKey?: string;
  /** The local controller; false: none (one already watches the gateway). */
  controller: StackControllerOptions | false;
  logger: Logger;
  /** Aborting it closes the stack at once (agents, engine server, gateway), whatever is running on it. */
  closeOnAbort?: AbortSignal;
}

/** How a per-agent stack gets its engines from the one `StackOptions.engine` builds (the main engine). */
export interface PerAgentOptions {
  /** The trained agents, each with a policy served as `MODEL-AGENT`. */
  agents: readonly string[];
  /** Model name the frozen agents are routed to (`agents.frozen_model`): the base weights answer it too. */
  frozenModel: string;
  /** An agent's engine: a copy of the starting weights, or one of the main engine's LoRA adapters. */
  policyEngine: (main: Engine, agent: string) => Promise<Engine>;
  /** The base weights (never trained): the main engine itself, or its adapters switched off. */
  baseEngine: (main: Engine) => Engine;
}

/** A running stack. */
export interface Stack {
  gatewayUrl: string;
  key: string;
  client: GatewayClient;
  /** The engine trained, or with a policy per agent the main engine (`policies` are the trained ones). */
  engine: Engine;
  /** A policy per agent: each trained policy; absent: `engine` is the one policy. */
  policies?: TrainedPolicy[];
  /** Model names the base weights answer at version 0 (per agent: the run's model name and the frozen model). */
  baseModels: string[];
  /** Where the policy is served and how new weights reach it. */
  serving: PolicyServing;
  /** Stops everything started, newest first; later calls return the first call's promise. */
  close(): Promise<void>;
}

/**
 * Stops run newest first exactly once. A stop added after closing began (a start under way at abort) runs at once,
 * and the next `close` waits for it too.
 */
class Stops {
  private readonly stops: (() => Promise<void> | void)[] = [];
  private closed = false;
  private done: Promise<void> = Promise.resolve();

  add(stop: () => Promise<void> | void): void {
    if (this.closed) this.done = runAll(this.done, [stop]);
    else this.stops.push(stop);
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.done = runAll(this.done, this.stops.splice(0).reverse());
    }
    return this.done;
  }
}

/** Runs `stops` in order after `before` settles; every stop runs, and the first error (if any) rejects. */
async function runAll(before: Promise<void>, stops: readonly (() => Promise<void> | void)[]): Promise<void> {
  let first: unknown;
  await before.catch((err: unknown) => {
    first = err;
  });
  for (const stop of stops) {
    try {
      await stop();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) throw first;
}

/** A fresh {@link Stops} that an abort of `signal` closes at once (already aborted: closed from the start). */
function stopsClosedOn(signal: AbortSignal | undefined): Stops {
  const stops = new Stops();
  if (signal?.aborted) {
    void stops.close().catch(() => undefined);
    return stops;
  }
  const onAbort = () => void stops.close().catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  stops.add(() => signal?.removeEventListener("abort", onAbort));
  return stops;
}

/**
 * Serves an engine through the OpenAI-compatible engine server on 127.0.0.1; returns it and its `/v1` URL.
 * @param adapters - more models it serves by name (a policy per agent), default none
 */
export async function startEngineServer(
  engine: Engine,
  modelName: string,
  adapters: readonly { modelName: string; engine: Engine }[] = [],
): Promise<{ server: FastifyInstance; endpoint: string }> {
  // Stopped together with the gateway and agents that call it: closing must not wait for their open requests.
  const server = await buildEngineServer({ engine, modelName, adapters, forceCloseConnections: true });
  const url = await server.listen({ host: "127.0.0.1", port: 0 });
  return { server, endpoint: `${url}/v1` };
}

/** Starts a local controller on the gateway. */
function startController(
  client: GatewayClient,
  gateway: RunningGateway,
  options: StackControllerOptions,
  stack: { runDir: string; logger: Logger },
): LocalController {
  const config = ControllerConfigSchema.parse({
    gateway_url: gateway.url,
    key: gateway.key,
    pool_size: options.poolSize,
    poll_interval_seconds: 0.2,
    state_file: join(stack.runDir, "controller-state.json"),
    ...options.settings,
  });
  const baseEnv = options.baseEnv ?? process.env;
  const controller = new LocalController({ client, config, logger: stack.logger, baseEnv });
  controller.start();
  return controller;
}

/** Checks a running gateway answers before an engine spends time loading. @throws {GatewayUnreachable} */
async function probeGateway(gateway: RunningGateway): Promise<void> {
  const client = new GatewayClient({ baseUrl: gateway.url, key: gateway.key });
  try {
    await client.healthz();
  } finally {
    await client.close();
  }
}

/** The gateway: the running one, or a child started and registered for stopping. */
async function gatewayOf(
  options: Pick<StackOptions, "gateway" | "runDir" | "modelName" | "gatewayArgs" | "upstreamKey">,
  stops: Stops,
): Promise<RunningGateway> {
  if (options.gateway !== undefined) return options.gateway;
  const dbPath = join(options.runDir, "gateway.db");
  const env: Record<string, string> = options.upstreamKey != null ? { ARCLIGHT_UPSTREAM_KEY: options.upstreamKey } : {};
  const child = await startGatewayChild(dbPath, options.modelName, options.gatewayArgs ?? [], undefined, env);
  stops.add(() => child.stop());
  return { url: child.url, key: child.key };
}

/** The engine server of the frozen model, with a close that does not wait for open requests. */
async function serveForFrozen(engine: Engine, modelName: string) {
  const { server, endpoint } = await startEngineServer(engine, modelName);
  return { endpoint, close: () => server.close() };
}

/** The engines of a per-agent stack: each agent's policy and the base weights. */
async function perAgentEngines(
  options: StackOptions,
  main: Engine,
  stops: Stops,
): Promise<{ policies: TrainedPolicy[]; base: Engine } | null> {
  const perAgent = options.perAgent;
  if (perAgent === undefined) return null;
  const policies: TrainedPolicy[] = [];
  for (const agent of perAgent.agents) {
    const engine = await perAgent.policyEngine(main, agent);
    stops.add(() => engine.dispose());
    policies.push({ agent, modelName: agentModelName(options.modelName, agent), engine });
  }
  return { policies, base: perAgent.baseEngine(main) };
}

/**
 * The policy serving: vLLM servers, a running engine server to publish to, or the engine served here (per agent:
 * the base weights as the run's model name and the frozen model, each policy as its own name).
 */
async function servingOf(
  options: StackOptions,
  engine: Engine,
  perAgent: { policies: TrainedPolicy[]; base: Engine } | null,
  stops: Stops,
): Promise<PolicyServing> {
  if (options.vllm !== undefined) {
    const { runDir, modelName, logger } = options;
    const addStop = (stop: () => Promise<void>) => stops.add(stop);
    const signal = options.closeOnAbort;
    const policyModels = perAgent?.policies.map((p) => p.modelName) ?? [modelName];
    // Per agent, the base weights answer the run's model name and the frozen model (never trained: version 0).
    const baseAliases = perAgent === null ? [] : [modelName, options.perAgent?.frozenModel ?? modelName];
    const context = { runDir, modelName, logger, addStop, policyModels, baseAliases, ...(signal ? { signal } : {}) };
    return vllmSamplerServing(options.vllm, context);
  }
  if (options.engineUrl !== undefined) {
    return remoteServing([options.engineUrl], join(options.runDir, "weights"), options.engineKey ?? "");
  }
  if (perAgent !== null) {
    const frozen = options.perAgent?.frozenModel;
    const aliases =
      frozen === undefined || frozen === options.modelName ? [] : [{ modelName: frozen, engine: perAgent.base }];
    const served = [...perAgent.policies, ...aliases];
    const { server, endpoint } = await startEngineServer(perAgent.base, options.modelName, served);
    stops.add(() => server.close());
    return collocatedServing(endpoint);
  }
  const { server, endpoint } = await startEngineServer(engine, options.modelName);
  stops.add(() => server.close());
  return collocatedServing(endpoint);
}

/**
 * Starts engine, gateway, client, engine server and controller in order, stopping what started on a failure.
 * @throws {ComponentStartFailed} | {@link GatewayUnreachable} | whatever the engine factory throws
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const stops = stopsClosedOn(options.closeOnAbort);
  const close = () => stops.close();
  // After each start: an interrupt that came while it ran stops the stack here, before the next component starts.
  const checkAbort = () => options.closeOnAbort?.throwIfAborted();
  try {
    if (options.gateway !== undefined) await probeGateway(options.gateway);
    const engine = await options.engine();
    stops.add(() => engine.dispose());
    checkAbort();
    const gateway = await gatewayOf(options, stops);
    checkAbort();
    const client = new GatewayClient({ baseUrl: gateway.url, key: gateway.key });
    stops.add(() => client.close());
    const perAgent = await perAgentEngines(options, engine, stops);
    checkAbort();
    const serving = await servingOf(options, engine, perAgent, stops);
    checkAbort();
    const frozenOnVllm = perAgent === null ? (options.vllm?.launch?.frozenModel ?? null) : null;
    if (frozenOnVllm !== null) {
      // The vLLM replicas serve the frozen model from their base weights (managed-vllm.ts): no second engine.
      await client.upsertModels(serving.endpoints.map((endpoint) => ({ model: frozenOnVllm, endpoint, version: 0 })));
    } else if (options.frozen !== undefined) {
      const { stop } = await startFrozenServing(options.frozen, client, serveForFrozen, options.runDir);
      stops.add(stop);
      checkAbort();
    }
    if (options.controller !== false) {
      const controller = startController(client, gateway, options.controller, options);
      stops.add(() => controller.shutdown());
    }
    options.closeOnAbort?.throwIfAborted();
    const running = { gatewayUrl: gateway.url, key: gateway.key, client, engine, serving, close };
    if (perAgent === null) return { ...running, baseModels: [] };
    const baseModels = [...new Set([options.modelName, options.perAgent?.frozenModel ?? options.modelName])];
    return { ...running, policies: perAgent.policies, baseModels };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Starts a stack, runs `body` on it, and closes it on every exit path. */
export async function withStack<T>(options: StackOptions, body: (stack: Stack) => Promise<T>): Promise<T> {
  const stack = await startStack(options);
  try {
    return await body(stack);
  } finally {
    await stack.close();
  }
}

/** What an agent stack starts: the gateway and controller of {@link StackOptions}, no engine. */
export type AgentStackOptions = Pick<
  StackOptions,
  "runDir" | "modelName" | "gateway" | "gatewayArgs" | "upstreamKey" | "logger" | "closeOnAbort"
> & { controller: StackControllerOptions };

/** A running agent stack: gateway and controller; the policy is served elsewhere (registered by the caller). */
export type AgentStack = Omit<Stack, "engine" | "serving" | "policies" | "baseModels">;

/**
 * A stack without an engine, for a policy served elsewhere: gateway and local controller (`arclight apo`).
 * @throws {ComponentStartFailed} | {@link GatewayUnreachable}
 */
export async function startAgentStack(options: AgentStackOptions): Promise<AgentStack> {
  const stops = stopsClosedOn(options.closeOnAbort);
  const close = () => stops.close();
  try {
    if (options.gateway !== undefined) await probeGateway(options.gateway);
    options.closeOnAbort?.throwIfAborted();
    const gateway = await gatewayOf(options, stops);
    options.closeOnAbort?.throwIfAborted();
    const client = new GatewayClient({ baseUrl: gateway.url, key: gateway.key });
    stops.add(() => client.close());
    const controller = startController(client, gateway, options.controller, options);
    stops.add(() => controller.shutdown());
    options.closeOnAbort?.throwIfAborted();
    return { gatewayUrl: gateway.url, key: gateway.key, client, close };
  } catch (err) {
    await close();
    throw err;
  }
}
