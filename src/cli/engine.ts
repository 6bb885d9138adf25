/**
 * @module `arclight engine serve`: serve an embedded engine (fresh `new:<preset>` weights or a checkpoint directory)
 * over the vLLM-compatible engine server until SIGINT/SIGTERM.
 */
import { basename, join } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import { MODEL_PRESETS, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import { buildEngineServer } from "../engine/server/app.js";
import { type EngineServeConfig, EngineServeConfigSchema } from "../engine/server/config.js";
import { CliError } from "./cli-error.js";

/** Parses an integer flag. @throws {CliError} naming the flag */
function intFlag(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n)) throw new CliError(`${flag}: expected an integer, got "${value}"`);
    return n;
  };
}

/**
 * Builds the engine a `--model` value names.
 * @throws {CliError} for an unknown preset, a path that is not a checkpoint directory, or a checkpoint whose config or
 * weights are invalid
 */
export async function engineForModel(config: EngineServeConfig): Promise<{ engine: EmbeddedEngine; name: string }> {
  const { model, seed } = config;
  if (model.startsWith("new:")) {
    const preset = model.slice("new:".length);
    if (!(preset in MODEL_PRESETS))
      throw new CliError(
        `--model ${model}: unknown preset "${preset}" (known: ${Object.keys(MODEL_PRESETS).join(", ")})`,
      );
    return { engine: await EmbeddedEngine.create({ config: preset as ModelPreset, seed }), name: preset };
  }
  try {
    return { engine: await EmbeddedEngine.load(model), name: basename(model) };
  } catch (err) {
    if (!(err instanceof CheckpointInvalid)) throw err;
    if (err.kind === "missing")
      throw new CliError(
        `--model ${model}: no checkpoint directory there (expected ${join(model, "config.json")}); or use new:<preset>`,
      );
    throw new CliError(`--model ${model}: ${err.reason}`);
  }
}

/** Serves until a signal; resolves once listening. */
async function serve(config: EngineServeConfig): Promise<void> {
  const log = pino({ level: config.log_level });
  const { engine, name } = await engineForModel(config);
  const app = await buildEngineServer({ engine, modelName: config.model_name ?? name, log });
  const url = await app.listen({ port: config.port, host: config.host });
  log.info({ url, model: config.model, contextLength: engine.contextLength }, "engine server listening");
  const stop = async (): Promise<void> => {
    await app.close();
    engine.dispose();
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}

/** Registers `arclight engine serve`. */
export function registerEngine(program: Command): void {
  const engine = program.command("engine").description("Run the embedded engine");
  engine
    .command("serve")
    .description("Serve an embedded engine over an OpenAI/vLLM-compatible HTTP API")
    .option("--model <model>", "new:<preset> (tiny, agent, bench, small) or a checkpoint directory", "new:agent")
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "TCP port (0 picks a free one)", intFlag("--port"), 8000)
    .option("--seed <seed>", "weight-init seed of new:<preset> models", intFlag("--seed"), 0)
    .option("--model-name <name>", "model name served (default: the preset or checkpoint directory name)")
    .option("--log-level <level>", "pino log level", "info")
    .action(async (flags: Record<string, unknown>) => {
      const parsed = EngineServeConfigSchema.safeParse({
        model: flags.model,
        host: flags.host,
        port: flags.port,
        seed: flags.seed,
        model_name: flags.modelName,
        log_level: flags.logLevel,
      });
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new CliError(`--${String(issue?.path[0] ?? "").replace("_", "-")}: ${issue?.message}`);
      }
      await serve(Object.freeze(parsed.data));
    });
}
