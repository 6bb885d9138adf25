/**
 * @module `arclight controller`: runs queued rollouts as local agent processes until SIGINT/SIGTERM, then kills every
 * live agent, fails its rollout ("controller shutdown") and exits 0.
 */
import { type Command, Option } from "commander";
import { pino } from "pino";
import { type ControllerConfig, ControllerConfigSchema } from "../controller/config.js";
import { LocalController } from "../controller/reconcile.js";
import { StateFileInvalid } from "../controller/state-file.js";
import { GatewayClient } from "../gateway/client.js";
import { CliError } from "./cli-error.js";
import {
  CONTROLLER_FLAGS,
  type ControllerFlag,
  type ControllerFlags,
  loadControllerConfig,
} from "./controller-config.js";

/**
 * Runs the controller until SIGINT or SIGTERM (a second signal exits at once with code 130).
 * @param config - the resolved configuration
 * @param env - inherited by every agent process (the controller's own environment)
 * @returns once every agent is killed and its rollout reported
 * @throws {CliError} when the state file exists but is unusable (a directory, not JSON, not a state file)
 */
export async function runController(
  config: Readonly<ControllerConfig>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  const logger = pino({ level: config.log_level });
  const client = new GatewayClient({ baseUrl: config.gateway_url, key: config.key });
  let controller: LocalController;
  try {
    controller = new LocalController({ client, config, logger, baseEnv: env });
  } catch (err) {
    await client.close();
    if (err instanceof StateFileInvalid) throw new CliError(`--state-file ${err.path}: ${err.reason}`);
    throw err;
  }
  controller.start();
  console.log(
    `arclight controller: pool ${config.pool_size}, gateway ${config.gateway_url}, state ${config.state_file}`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  const force = () => process.exit(130);
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  logger.info({ component: "controller", signal }, "shutting down: killing live agents");
  await controller.shutdown();
  await client.close();
}

/** Help line of a flag: the schema's description, the default, and the alias. */
function flagHelp({ key, alias }: ControllerFlag): string {
  const field = ControllerConfigSchema.shape[key];
  const parsed = field.safeParse(undefined);
  const fallback = parsed.success && parsed.data !== undefined ? ` (default ${JSON.stringify(parsed.data)})` : "";
  return `${field.description ?? key}${fallback}${alias ? `; alias ${alias}` : ""}`;
}

/** Registers `arclight controller` on the program: `--config` plus one `--kebab-case` flag per config key. */
export function registerController(program: Command): void {
  const command = program
    .command("controller")
    .description("Run queued rollouts as agent processes (any language), reporting their outcome to the gateway")
    .showHelpAfterError(false)
    .option("--config <file>", "YAML file with controller keys (flags and env override it)");
  for (const flag of CONTROLLER_FLAGS) {
    command.option(`${flag.flag} ${flag.placeholder}`, flagHelp(flag));
    if (flag.alias) command.addOption(new Option(`${flag.alias} ${flag.placeholder}`).hideHelp());
  }
  command.action(async (flags: ControllerFlags) => {
    await runController(loadControllerConfig(flags, process.env), process.env);
  });
}
