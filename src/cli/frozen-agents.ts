/**
 * @module `arclight train` with `agents.frozen`: the stack serves a frozen copy of the starting weights
 * (run/frozen-serving.ts) and the gateway child routes the frozen agents' calls to it (`agent_routes`, written to a
 * gateway YAML passed with `--config`). A running gateway (`--gateway-url`) must be given the routes by its operator.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { Engine } from "../engine/engine.js";
import type { StackOptions } from "../run/stack.js";
import type { TrainerConfig } from "../trainer/config.js";

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
  const file = join(mkdtempSync(join(tmpdir(), "arclight-agent-routes-")), "gateway.yaml");
  writeFileSync(file, stringify({ agent_routes: routes }));
  return { frozen, gatewayArgs: ["--config", file] };
}
