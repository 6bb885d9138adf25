/**
 * @module `arclight controller`: runs queued rollouts as local agent processes until SIGINT/SIGTERM, then kills every
 * live agent, fails its rollout ("controller shutdown") and exits 0.
 */
import type { Command } from "commander";
import { pino } from "pino";
import type { ControllerConfig } from "../controller/config.js";
import { LocalController } from "../controller/reconcile.js";
import { StateFileInvalid } from "../controller/state-file.js";
import { GatewayClient } from "../gateway/client.js";
import { type ControllerFlags, loadControllerConfig } from "./controller-config.js";
import { CliError } from "./program.js";

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

/** Registers `arclight controller` on the program. */
export function registerController(program: Command): void {
  program
    .command("controller")
    .description("Run queued rollouts as agent processes (any language), reporting their outcome to the gateway")
    .showHelpAfterError(false)
    .option("--config <file>", "YAML file with controller keys (flags and env override it)")
    .option("--gateway-url <url>", "gateway base URL (default http://127.0.0.1:8080)")
    .option("--key <key>", "gateway API key; also ARCLIGHT_KEY or AGL_KEY; passed to agents as AGL_KEY")
    .option("--mode <mode>", "where agents run: local (default local)")
    .option("--pool-size <n>", "most agent processes alive at once (default 8)")
    .option("--poll-interval <s>", "seconds between reconcile passes (default 1)")
    .option("--spawn-rate <n>", "most process spawns per second (default 20)")
    .option("--log-tail-bytes <n>", "output bytes kept as the log event of a failed agent (default 65536)")
    .option("--kill-grace-seconds <s>", "seconds between SIGTERM and SIGKILL (default 5)")
    .option("--state-file <path>", "record of owned processes (default .arclight/controller-state.json)")
    .option("--cwd <dir>", "working directory of agent processes (default: the controller's)")
    .option("--log-level <level>", "fatal|error|warn|info|debug|trace|silent (default info)")
    .action(async (flags: ControllerFlags) => {
      await runController(loadControllerConfig(flags, process.env), process.env);
    });
}
