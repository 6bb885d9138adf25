/**
 * @module `arclight train` with `agents.frozen` or `agents.policy: per_agent`: the stack serves a frozen copy of the
 * starting weights (run/frozen-serving.ts), or each trained agent's own policy beside the base weights, and the
 * gateway child routes each agent's calls to its model (`agent_routes`, written to a gateway YAML passed with
 * `--config`). A running gateway (`--gateway-url`) must be given the routes by its operator.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { Engine } from "../engine/engine.js";
import { RemoteEngine } from "../engine/remote/remote-engine.js";
import type { PerAgentOptions, StackOptions } from "../run/stack.js";
import type { TrainerConfig } from "../trainer/config.js";
import { agentModelName } from "../trainer/policies.js";
import { CliError } from "./cli-error.js";

/**
 * The stack options that serve frozen agents, or none when `agents.frozen` is empty.
 * @param agents - the trainer config's `agents` section
 * @param engine - the trained engine's factory (the frozen copy is built the same way: the starting weights)
 * @param startsGateway - true when the stack starts the gateway child (then it gets the routes)
 * @returns `frozen` and, for a gateway child, `gatewayArgs` naming a YAML file with `agent_routes`
 */
export function frozenAgentsStack(
  agents: TrainerConfig["agents"],
  engine: () => Promise<Engine>,
  startsGateway: boolean,
): Pick<StackOptions, "frozen" | "gatewayArgs"> {
  if (agents.frozen.length === 0) return {};
  const frozen = { modelName: agents.frozen_model, engine };
  if (!startsGateway) return { frozen };
  const routes = Object.fromEntries(agents.frozen.map((entry) => [entry, agents.frozen_model]));
  return { frozen, gatewayArgs: routesArgs(routes) };
}

/** `--config FILE` of a gateway YAML holding `agent_routes`. */
function routesArgs(routes: Record<string, string>): string[] {
  const file = join(mkdtempSync(join(tmpdir(), "arclight-agent-routes-")), "gateway.yaml");
  writeFileSync(file, stringify({ agent_routes: routes }));
  return ["--config", file];
}

/**
 * The stack options of a policy per agent (`agents.policy: per_agent`): the embedded engine builds a copy per agent;
 * the torch engine holds one base and a LoRA adapter per agent in one worker (started with `--adapters`), and serves
 * the base with its adapters off. The gateway child routes each trained agent to `MODEL-AGENT` and each frozen one to
 * `agents.frozen_model` (the base weights).
 * @param agents - the trainer config's `agents` section (validated: `train` names each agent)
 * @param modelName - the run's model name
 * @param copy - an embedded agent's engine: its starting weights (fresh, or from `weightsOf(agent)`)
 * @param weightsOf - the checkpoint an agent's policy starts from (`--init-from`, or a per-agent checkpoint's
 *   `policies/AGENT`); undefined: the starting weights. A torch adapter loads it; `copy` reads it itself.
 * @param startsGateway - true when the stack starts the gateway child (then it gets the routes)
 * @throws {CliError} when `agents.frozen_model` is also an agent's policy name
 */
export function perAgentStack(
  agents: TrainerConfig["agents"],
  modelName: string,
  copy: (agent: string) => Promise<Engine>,
  weightsOf: (agent: string) => string | undefined,
  startsGateway: boolean,
): Pick<StackOptions, "perAgent" | "gatewayArgs"> {
  const clash = agents.train.find((agent) => agentModelName(modelName, agent) === agents.frozen_model);
  if (clash !== undefined) {
    throw new CliError(
      `agents.frozen_model ${agents.frozen_model}: also the model name of agent ${clash}'s policy (MODEL-AGENT); ` +
        "give the base weights another name",
    );
  }
  const perAgent: PerAgentOptions = {
    agents: agents.train,
    frozenModel: agents.frozen_model,
    async policyEngine(main, agent) {
      if (!(main instanceof RemoteEngine)) return copy(agent);
      const adapter = main.adapterEngine(agent);
      const weights = weightsOf(agent);
      if (weights !== undefined) {
        await adapter.loadCheckpoint(weights);
        await adapter.resetOptimizer();
      }
      return adapter;
    },
    baseEngine: (main) => (main instanceof RemoteEngine ? main.adapterEngine("base") : main),
  };
  if (!startsGateway) return { perAgent };
  const routes: Record<string, string> = Object.fromEntries([
    ...agents.train.map((agent) => [agent, agentModelName(modelName, agent)]),
    ...agents.frozen.map((entry) => [entry, agents.frozen_model]),
  ]);
  return { perAgent, gatewayArgs: routesArgs(routes) };
}
