/**
 * @module `arclight export`: recorded rollouts → JSONL for fine-tuning elsewhere, in OpenAI's chat fine-tuning format
 * (`--format chat`: messages + tools) or token level (`--format tokens`: prompt/response token ids, response mask,
 * logprobs, reward). The same selection as `arclight sft` (run prefix, tag, reward threshold, best-of-N); each line is
 * checked against its format's schema before it is written.
 */
import { accessSync, constants, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import type { GatewayClient } from "../gateway/client.js";
import type { RolloutRecord } from "../trainer/batch.js";
import { ChatExampleSchema, chatExampleOf } from "../trainer/export-chat.js";
import { TokenExampleSchema, tokenExamplesOf } from "../trainer/export-tokens.js";
import { parseSftConfig } from "../trainer/sft-config.js";
import { type SftSelect, selectRollouts } from "../trainer/sft-select.js";
import { CliError } from "./cli-error.js";
import { positiveInt } from "./common-flags.js";
import { openSourceGateway } from "./source-gateway.js";

/** Flags of `arclight export`. */
interface ExportFlags {
  format: string;
  out: string;
  gatewayUrl?: string;
  db?: string;
  key?: string;
  idPrefix?: string;
  tag?: string[];
  minReward?: string;
  bestOfN?: boolean;
  level: string;
  maxPromptLength: string;
  maxResponseLength: string;
}

/** The selection the flags describe. @throws {CliError} naming --tag or --min-reward */
function selectOf(flags: ExportFlags): SftSelect {
  const metadata: Record<string, string> = {};
  for (const pair of flags.tag ?? []) {
    const eq = pair.indexOf("=");
    if (eq < 1) throw new CliError(`--tag ${pair}: expected KEY=VALUE (a metadata pair)`);
    metadata[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const minReward = flags.minReward === undefined ? null : Number(flags.minReward);
  if (minReward !== null && !Number.isFinite(minReward)) {
    throw new CliError(`--min-reward ${flags.minReward}: expected a number`);
  }
  const select = {
    id_prefix: flags.idPrefix ?? null,
    metadata,
    min_reward: minReward,
    best_of_n: flags.bestOfN ?? false,
  };
  return parseSftConfig({ source: { gateway_url: "unused" }, select }).select;
}

/** The chat lines of the records (rollouts without a valid chat call are skipped and counted). */
async function chatLines(client: GatewayClient, records: readonly RolloutRecord[]) {
  const lines: string[] = [];
  for (const record of records) {
    const example = chatExampleOf(await client.getEvents(record.rolloutId));
    if (example !== null) lines.push(JSON.stringify(ChatExampleSchema.parse(example)));
  }
  return { lines, skipped: records.length - lines.length };
}

/** The token-level lines of the records (one per row; rollouts without a usable call give none). */
function tokenLines(records: readonly RolloutRecord[], flags: ExportFlags) {
  const level = flags.level;
  if (level !== "trajectory" && level !== "transition") {
    throw new CliError(`--level ${level}: expected trajectory or transition`);
  }
  const limits = {
    maxPromptLength: positiveInt("--max-prompt-length", flags.maxPromptLength),
    maxResponseLength: positiveInt("--max-response-length", flags.maxResponseLength),
  };
  const lines: string[] = [];
  let skipped = 0;
  for (const record of records) {
    const examples = tokenExamplesOf(record, { level, limits, rewardFillnaValue: 0 });
    if (examples.length === 0) skipped += 1;
    for (const example of examples) lines.push(JSON.stringify(TokenExampleSchema.parse(example)));
  }
  return { lines, skipped };
}

/**
 * Checks before any work that `--out` can be written: its folder exists and is writable, and it is not a folder.
 * @throws {CliError} naming --out
 */
function checkOut(out: string): void {
  const dir = dirname(resolve(out));
  try {
    if (!statSync(dir).isDirectory()) throw new CliError(`--out ${out}: ${dir} is not a folder`);
    accessSync(dir, constants.W_OK);
  } catch (err) {
    if (err instanceof CliError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `--out ${out}: folder ${dir} ${code === "ENOENT" ? "does not exist" : `is not writable (${code})`}`,
    );
  }
  let isDir = false;
  try {
    isDir = statSync(out).isDirectory();
  } catch {
    // A new file: fine.
  }
  if (isDir) throw new CliError(`--out ${out}: is a folder; name a file`);
}

/** Runs the command. */
async function exportRollouts(flags: ExportFlags): Promise<void> {
  if (flags.format !== "chat" && flags.format !== "tokens") {
    throw new CliError(`--format ${flags.format}: expected chat or tokens`);
  }
  if ((flags.gatewayUrl === undefined) === (flags.db === undefined)) {
    throw new CliError("give one of --gateway-url and --db (where the rollouts are)");
  }
  checkOut(flags.out);
  const select = selectOf(flags);
  const source = await openSourceGateway({
    gatewayUrl: flags.gatewayUrl ?? null,
    dbPath: flags.db === undefined ? null : resolve(flags.db),
    ...(flags.key !== undefined ? { key: flags.key } : {}),
    dbFlag: "--db",
  });
  try {
    const selected = await selectRollouts(source.client, select, 0);
    const { lines, skipped } =
      flags.format === "chat" ? await chatLines(source.client, selected.records) : tokenLines(selected.records, flags);
    writeFileSync(flags.out, lines.map((line) => `${line}\n`).join(""));
    console.log(
      `arclight export: ${selected.records.length} rollouts selected (${selected.matched} matched), ` +
        `${lines.length} ${flags.format} lines written to ${flags.out}, ${skipped} rollouts without a usable call`,
    );
  } finally {
    await source.close();
  }
}

/**
 * Registers `arclight export`.
 * @param program - the root commander program
 */
export function registerExport(program: Command): void {
  program
    .command("export")
    .description("Write recorded rollouts as JSONL: OpenAI chat fine-tuning format or token level")
    .requiredOption("--format <format>", "chat (messages + tools) or tokens (token ids, mask, logprobs, reward)")
    .requiredOption("--out <file>", "JSONL file to write")
    .option("--gateway-url <url>", "read the rollouts from this running gateway")
    .option("--db <file>", "read the rollouts from this gateway SQLite file, e.g. runs/NAME/gateway.db")
    .option("--key <key>", "API key of that gateway (also ARCLIGHT_KEY or AGL_KEY)")
    .option("--id-prefix <prefix>", "only rollouts whose id starts with this (a run)")
    .option("--tag <key=value...>", "only rollouts whose metadata has these pairs")
    .option("--min-reward <r>", "only rollouts with at least this final reward")
    .option("--best-of-n", "only the highest-reward rollout of each input")
    .option("--level <level>", "tokens: trajectory (one row per rollout) or transition (one per call)", "trajectory")
    .option("--max-prompt-length <n>", "tokens: drop rows whose first prompt is longer (tokens)", "4096")
    .option("--max-response-length <n>", "tokens: truncate the response region to this (tokens)", "4096")
    .action(exportRollouts);
}
