/**
 * @module `arclight controller`: runs queued rollouts as local agent processes until SIGINT/SIGTERM, then kills every
 * live agent, fails its rollout ("controller shutdown") and exits 0; with `--mode k8s`, as one Kubernetes Job per
 * attempt, left running on shutdown for the next controller to adopt.
 */
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { type Command, Option } from "commander";
import { type Logger, pino } from "pino";
import { type ControllerConfig, ControllerConfigSchema } from "../controller/config.js";
import { K8sController } from "../controller/k8s/controller.js";
import { KubeApi } from "../controller/k8s/kube-api.js";
import { LocalController } from "../controller/reconcile.js";
import { StateFileInvalid } from "../controller/state-file.js";
import { GatewayClient } from "../gateway/client.js";
import { stopWhenParentGone } from "../process/parent-watch.js";
import { CliError } from "./cli-error.js";
import {
  CONTROLLER_FLAGS,
  type ControllerFlag,
  type ControllerFlags,
  loadControllerConfig,
} from "./controller-config.js";
import { warnKeyOnArgv } from "./key-source.js";

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
  if (config.mode === "k8s") return runK8sController(config, logger);
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
  const signal = await untilSignal();
  logger.info({ component: "controller", signal }, "shutting down: killing live agents");
  await controller.shutdown();
  await client.close();
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once with code 130. */
async function untilSignal(): Promise<NodeJS.Signals> {
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
    // A controller under a stopped npx (npm's shell dies without passing the SIGTERM on) stops the same way.
    stopWhenParentGone();
  });
  const force = () => process.exit(130);
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  return signal;
}

/**
 * The Kubernetes API of `--kubeconfig`, else client-node's default search (KUBECONFIG, ~/.kube/config, then the
 * pod's in-cluster service account).
 * @throws {CliError} naming `--kubeconfig` when the file cannot be loaded
 */
function loadKubeConfig(config: Readonly<ControllerConfig>): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    if (config.kubeconfig !== undefined) kubeConfig.loadFromFile(config.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    throw new CliError(`--kubeconfig ${config.kubeconfig ?? "(default)"}: ${(err as Error).message}`);
  }
  if (kubeConfig.getCurrentCluster() === null) {
    throw new CliError("--kubeconfig: no cluster found (give --kubeconfig PATH, or run in a pod)");
  }
  return kubeConfig;
}

/** `--job-template-file`'s text. @throws {CliError} naming the flag when it cannot be read */
function readJobTemplate(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new CliError(`--job-template-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** `--mode k8s`: runs rollouts as Jobs until SIGINT/SIGTERM; Jobs keep running for the next controller to adopt. */
async function runK8sController(config: Readonly<ControllerConfig>, logger: Logger): Promise<void> {
  const api = new KubeApi(loadKubeConfig(config), config.namespace);
  const defaultJobTemplate = readJobTemplate(config.job_template_file);
  const client = new GatewayClient({ baseUrl: config.gateway_url, key: config.key });
  const controller = new K8sController({ client, config, api, logger, defaultJobTemplate });
  controller.start();
  console.log(
    `arclight controller: k8s namespace ${config.namespace}, gateway ${config.gateway_url}, ` +
      `at most ${config.max_jobs_per_minute} Jobs/min`,
  );
  const signal = await untilSignal();
  logger.info({ component: "controller", signal }, "shutting down: Jobs keep running");
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
    .description(
      "Run queued rollouts as agent processes (any language) or, with --mode k8s, as Kubernetes Jobs, reporting their outcome to the gateway",
    )
    .showHelpAfterError(false)
    .option("--config <file>", "YAML file with controller keys (flags and env override it)")
    .option("--key-file <path>", "file whose first line is the gateway admin key; also ARCLIGHT_KEY_FILE");
  for (const flag of CONTROLLER_FLAGS) {
    command.option(`${flag.flag} ${flag.placeholder}`, flagHelp(flag));
    if (flag.alias) command.addOption(new Option(`${flag.alias} ${flag.placeholder}`).hideHelp());
  }
  command.action(async (flags: ControllerFlags) => {
    const config = loadControllerConfig(flags, process.env);
    warnKeyOnArgv("controller", flags);
    await runController(config, process.env);
  });
}
