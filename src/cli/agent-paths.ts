/**
 * @module The one base of a config file's paths: its own folder. Data paths resolve against it (the loaders do that);
 * here, the agent's command and `agent_class` do too, for each part that names a file there: `[python3, agent.py]`
 * beside the YAML becomes `[python3, /abs/dir/agent.py]`, so the run works from any working directory. Program names
 * found on PATH (`node`, `python3`), options, and anything that is no file beside the config stay as written, and the
 * agent still runs in the directory arclight was started from.
 */
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { TrainerConfig } from "../trainer/config.js";

/** The agent-naming fields of a controller section. */
type AgentFields = Pick<TrainerConfig["controller"], "command" | "agent_class">;

/** True when `path` names a file under `base` (not a folder, not missing). */
function isFileIn(base: string, path: string): boolean {
  try {
    return statSync(resolve(base, path)).isFile();
  } catch {
    return false;
  }
}

/**
 * One command argument, made absolute when it is a relative path of a file in `base`.
 * @param base - the config file's folder, absolute
 * @param arg - one argv entry
 */
export function resolveAgentArg(base: string, arg: string): string {
  if (arg === "" || arg.startsWith("-") || isAbsolute(arg) || !isFileIn(base, arg)) return arg;
  return resolve(base, arg);
}

/**
 * A controller section with its command's file arguments and `agent_class`'s module resolved against the config's
 * folder (see the module doc).
 * @param controller - the parsed section
 * @param base - the config file's folder, absolute
 * @returns a copy with the paths resolved
 */
export function resolveAgentPaths<T extends AgentFields>(controller: T, base: string): T {
  const command = controller.command.map((arg) => resolveAgentArg(base, arg));
  let agentClass = controller.agent_class;
  if (agentClass !== null) {
    const colon = agentClass.lastIndexOf(":");
    const module = colon > 0 ? agentClass.slice(0, colon) : agentClass;
    agentClass = `${resolveAgentArg(base, module)}${colon > 0 ? agentClass.slice(colon) : ""}`;
  }
  return { ...controller, command, agent_class: agentClass };
}
