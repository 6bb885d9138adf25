/**
 * @module The flags of `arclight eval`, checked before anything starts: which config runs the agent, which tasks,
 * how many samples and which pass@k, and where the policy is served (the config's engine, a checkpoint of it, or an
 * OpenAI-compatible endpoint). Each bad flag gets one line naming it.
 */
import { statSync } from "node:fs";
import { extname } from "node:path";
import { CliError } from "./cli-error.js";
import { positiveInt } from "./common-flags.js";

/** Flags of `arclight eval`, as commander gives them. */
export interface EvalFlags {
  data?: string;
  split: string;
  limit?: string;
  config?: string;
  checkpoint?: string;
  endpoint?: string;
  model?: string;
  apiKeyEnv?: string;
  samples: string;
  k?: string;
  threshold?: string;
  temperature?: string;
  out?: string;
  poolSize?: string;
  /** The config's embedded engine: its model preset (as `arclight train --preset`). */
  preset?: string;
  /** The config's embedded engine: its weight-init seed (as `arclight train --engine-seed`). */
  engineSeed?: string;
  logLevel: string;
  /** `--set KEY=VALUE` overrides of the config, in order. */
  set: string[];
}

/** Where the evaluated policy is served. */
export type PolicySource =
  | { kind: "config-engine" }
  | { kind: "checkpoint"; dir: string }
  /** An embedded checkpoint named as eval's argument (`arclight eval CHECKPOINT --data FILE [--config YAML]`). */
  | { kind: "embedded-checkpoint"; dir: string }
  | { kind: "endpoint"; url: string; model: string; apiKey: string | null };

/** The checked sampling and reporting flags. */
export interface EvalSampling {
  samples: number;
  ks: number[];
  /** Explicit `--threshold`; undefined: the config's `pass_threshold`. */
  threshold?: number;
  temperature: number;
  out: { path: string; format: "json" | "csv" } | null;
  limit?: number;
  poolSize?: number;
}

/** A number flag, finite and at least `min` (any finite number when `min` is -Infinity). */
function numberFlag(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < min) {
    throw new CliError(`${flag} ${value}: expected a number${min === -Infinity ? "" : ` >= ${min}`}`);
  }
  return n;
}

/**
 * The k values: `--k 1,5,10`, each a positive integer no larger than `--samples`; default 1, and the samples count
 * when it is above 1.
 * @throws {CliError} naming --k
 */
export function kList(value: string | undefined, samples: number): number[] {
  if (value === undefined) return samples > 1 ? [1, samples] : [1];
  const ks = value.split(",").map((part) => {
    const k = Number(part.trim());
    if (!Number.isInteger(k) || k < 1) throw new CliError(`--k ${value}: expected positive integers, e.g. 1,5`);
    if (k > samples) {
      throw new CliError(`--k ${value}: pass@${k} needs at least ${k} samples per task (--samples is ${samples})`);
    }
    return k;
  });
  return [...new Set(ks)].sort((a, b) => a - b);
}

/** `--out`: a .json or .csv path. */
function outFlag(value: string | undefined): EvalSampling["out"] {
  if (value === undefined) return null;
  const ext = extname(value).toLowerCase();
  if (ext !== ".json" && ext !== ".csv") throw new CliError(`--out ${value}: expected a .json or .csv file name`);
  return { path: value, format: ext === ".json" ? "json" : "csv" };
}

/**
 * The sampling and reporting flags.
 * @throws {CliError} naming --samples, --k, --threshold, --temperature, --out, --limit or --pool-size
 */
export function samplingOf(flags: EvalFlags): EvalSampling {
  const samples = positiveInt("--samples", flags.samples);
  return {
    samples,
    ks: kList(flags.k, samples),
    ...(flags.threshold !== undefined ? { threshold: numberFlag("--threshold", flags.threshold, -Infinity) } : {}),
    // Greedy for one sample; several samples of one greedy policy would be the same answer n times.
    temperature:
      flags.temperature === undefined ? (samples === 1 ? 0 : 0.8) : numberFlag("--temperature", flags.temperature, 0),
    out: outFlag(flags.out),
    ...(flags.limit !== undefined ? { limit: positiveInt("--limit", flags.limit) } : {}),
    ...(flags.poolSize !== undefined ? { poolSize: positiveInt("--pool-size", flags.poolSize) } : {}),
  };
}

/**
 * Checks that an `--endpoint` answers HTTP at all (any status: a server that wants a key still answers), so a wrong
 * host or port fails here instead of leaving every agent retrying its model call until the rollout timeout.
 * @param url the endpoint's base URL; `GET URL/models` is asked
 * @param timeoutMs how long to wait for a response
 * @throws {CliError} naming --endpoint when nothing answers (connection refused, no such host, timeout)
 */
export async function probeEndpoint(url: string, timeoutMs = 10_000): Promise<void> {
  const target = `${url.replace(/\/+$/, "")}/models`;
  try {
    const response = await fetch(target, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why =
      err instanceof Error && err.name === "TimeoutError"
        ? `no answer in ${timeoutMs} ms`
        : (cause?.code ?? cause?.message ?? String(err));
    throw new CliError(`--endpoint ${url}: GET ${target} got no HTTP answer (${why}); is the server up at that URL?`);
  }
}

/** Whether a path is a directory (an embedded checkpoint given as eval's argument). */
export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The endpoint source, its key read from the env var `--api-key-env` names. */
function endpointSource(flags: EvalFlags, env: Readonly<Record<string, string | undefined>>): PolicySource {
  const url = flags.endpoint as string;
  if (!/^https?:\/\/[^\s/]+/.test(url))
    throw new CliError(`--endpoint ${url}: expected an http(s) URL, e.g. http://127.0.0.1:8000/v1`);
  if (flags.model === undefined || flags.model === "") {
    throw new CliError("--endpoint needs --model NAME: the model name the endpoint serves");
  }
  let apiKey: string | null = null;
  if (flags.apiKeyEnv !== undefined) {
    apiKey = env[flags.apiKeyEnv] ?? "";
    if (apiKey === "") throw new CliError(`--api-key-env ${flags.apiKeyEnv}: that environment variable is not set`);
  }
  return { kind: "endpoint", url, model: flags.model, apiKey };
}

/**
 * Where the policy is served: `--endpoint` (with `--model`, `--api-key-env`), `--checkpoint`, an embedded checkpoint
 * given as the argument, or the config's own engine.
 * @param argIsCheckpoint - eval's argument is a checkpoint directory
 * @param arg - eval's argument
 * @throws {CliError} naming the flag for conflicting or incomplete flags
 */
export function policySourceOf(
  flags: EvalFlags,
  argIsCheckpoint: boolean,
  arg: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): PolicySource {
  if (flags.endpoint !== undefined && flags.checkpoint !== undefined) {
    throw new CliError("--endpoint and --checkpoint: give one (an endpoint serves its own weights)");
  }
  if (flags.endpoint === undefined && (flags.model !== undefined || flags.apiKeyEnv !== undefined)) {
    throw new CliError(`${flags.model !== undefined ? "--model" : "--api-key-env"}: only with --endpoint URL`);
  }
  if (argIsCheckpoint && (flags.endpoint !== undefined || flags.checkpoint !== undefined)) {
    throw new CliError(
      `${flags.endpoint !== undefined ? "--endpoint" : "--checkpoint"}: the argument ${arg} is already a checkpoint`,
    );
  }
  const engineFlag = flags.preset !== undefined ? "--preset" : flags.engineSeed !== undefined ? "--engine-seed" : null;
  if (engineFlag !== null && (flags.endpoint !== undefined || argIsCheckpoint)) {
    throw new CliError(
      `${engineFlag}: only for the config's engine (its own weights, or a --checkpoint's frozen agents'); ` +
        `${argIsCheckpoint ? "a checkpoint argument" : "an endpoint"} brings its own model`,
    );
  }
  if (flags.endpoint !== undefined) return endpointSource(flags, env);
  if (flags.checkpoint !== undefined) return { kind: "checkpoint", dir: flags.checkpoint };
  if (argIsCheckpoint) return { kind: "embedded-checkpoint", dir: arg as string };
  return { kind: "config-engine" };
}
