/**
 * @module Embedded checkpoints: `config.json`, `model.safetensors` (policy version in metadata) and
 * `optimizer.safetensors` (`m.<name>` / `v.<name>`), exact float32 so training resumes bit-exactly.
 */
import { existsSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeDirs } from "../../fs/make-dirs.js";
import { CheckpointInvalid } from "../checkpoint-error.js";
import type { AdamWConstants } from "./adamw.js";
import { type ModelConfig, ModelConfigSchema } from "./config.js";
import { paramSpecs } from "./params.js";
import {
  decodeSafeTensors,
  encodeSafeTensors,
  type SafeTensor,
  type SafeTensorsFile,
  SafeTensorsFormatError,
} from "./safetensors.js";

/** Everything a checkpoint holds. */
export interface CheckpointData {
  config: ModelConfig;
  policyVersion: number;
  /** Weight name → tensor. */
  weights: Map<string, SafeTensor>;
  optimizer: {
    step: number;
    constants: AdamWConstants;
    /** "m.<name>" / "v.<name>" → tensor; empty before the first step. */
    moments: Map<string, SafeTensor>;
  };
}

/** File names inside a checkpoint directory. */
export const CHECKPOINT_FILES = {
  config: "config.json",
  weights: "model.safetensors",
  optimizer: "optimizer.safetensors",
} as const;

/** Writes a checkpoint, each file renamed into place so a crash never leaves a torn file. */
export async function writeCheckpoint(dir: string, data: CheckpointData): Promise<void> {
  makeDirs(dir);
  const { step, constants } = data.optimizer;
  await atomicWrite(join(dir, CHECKPOINT_FILES.config), Buffer.from(`${JSON.stringify(data.config, null, 2)}\n`));
  await atomicWrite(
    join(dir, CHECKPOINT_FILES.weights),
    encodeSafeTensors(data.weights, { format: "pt", policy_version: String(data.policyVersion) }),
  );
  const metadata = {
    step: String(step),
    beta1: String(constants.beta1),
    beta2: String(constants.beta2),
    epsilon: String(constants.epsilon),
  };
  await atomicWrite(join(dir, CHECKPOINT_FILES.optimizer), encodeSafeTensors(data.optimizer.moments, metadata));
}

/**
 * Reads and fully checks a checkpoint, so no model is built from a half-valid directory; without
 * `optimizer.safetensors` it loads with a fresh optimiser.
 * @throws {CheckpointInvalid} `missing` when nothing is at `dir`, else `invalid`
 */
export async function readCheckpoint(dir: string): Promise<CheckpointData> {
  const config = parseConfigFile(dir, await readRequired(dir, CHECKPOINT_FILES.config));
  const weightsBytes = await readRequired(dir, CHECKPOINT_FILES.weights);
  const weightsFile = decodeCheckpointFile(dir, CHECKPOINT_FILES.weights, weightsBytes);
  const optimizerBytes = await readOptional(dir, CHECKPOINT_FILES.optimizer);
  const optimizerFile = optimizerBytes
    ? decodeCheckpointFile(dir, CHECKPOINT_FILES.optimizer, optimizerBytes)
    : { tensors: new Map<string, SafeTensor>(), metadata: {} };
  checkTensors(dir, config, weightsFile.tensors, optimizerFile.tensors);
  const meta = optimizerFile.metadata as Record<string, string | undefined>;
  return {
    config,
    policyVersion: Number(weightsFile.metadata.policy_version ?? 0),
    weights: weightsFile.tensors,
    optimizer: {
      step: Number(meta.step ?? 0),
      constants: {
        beta1: Number(meta.beta1 ?? 0.9),
        beta2: Number(meta.beta2 ?? 0.999),
        epsilon: Number(meta.epsilon ?? 1e-8),
      },
      moments: optimizerFile.tensors,
    },
  };
}

/** Reads one file of a checkpoint. */
async function readRequired(dir: string, name: string): Promise<Buffer> {
  try {
    return await readFile(join(dir, name));
  } catch (error) {
    throw readError(dir, name, error);
  }
}

/** Reads one file of a checkpoint; `null` when the directory lacks it. */
async function readOptional(dir: string, name: string): Promise<Buffer | null> {
  try {
    return await readFile(join(dir, name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw readError(dir, name, error);
  }
}

function readError(dir: string, name: string, error: unknown): CheckpointInvalid {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOTDIR") return new CheckpointInvalid(dir, "invalid", "not a directory", { cause: error });
  if (code === "ENOENT" && !existsSync(dir))
    return new CheckpointInvalid(dir, "missing", "no such directory", { cause: error });
  const reason = code === "ENOENT" ? `no ${name} (not a checkpoint directory)` : `cannot read ${name} (${code})`;
  return new CheckpointInvalid(dir, "invalid", reason, { cause: error });
}

function parseConfigFile(dir: string, bytes: Buffer): ModelConfig {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString("utf8"));
  } catch (error) {
    throw new CheckpointInvalid(dir, "invalid", `config.json is not JSON (${(error as Error).message})`);
  }
  const parsed = ModelConfigSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => (i.path.length > 0 ? `${i.path.join(".")}: ` : "") + i.message);
  throw new CheckpointInvalid(dir, "invalid", `config.json: ${problems.join("; ")}`);
}

function decodeCheckpointFile(dir: string, name: string, bytes: Buffer): SafeTensorsFile {
  try {
    return decodeSafeTensors(bytes);
  } catch (error) {
    if (!(error instanceof SafeTensorsFormatError)) throw error;
    throw new CheckpointInvalid(dir, "invalid", `${name}: ${error.message}`, { cause: error });
  }
}

/** Every weight the config needs, with its shape; moments only for known weights, with their shapes. */
function checkTensors(
  dir: string,
  config: ModelConfig,
  weights: Map<string, SafeTensor>,
  moments: Map<string, SafeTensor>,
): void {
  const shapes = new Map(paramSpecs(config).map((spec) => [spec.name, spec.shape]));
  for (const [name, shape] of shapes) {
    const tensor = weights.get(name);
    if (!tensor) throw new CheckpointInvalid(dir, "invalid", `${CHECKPOINT_FILES.weights}: weight ${name} is missing`);
    if (tensor.shape.join() !== shape.join())
      throw new CheckpointInvalid(
        dir,
        "invalid",
        `${CHECKPOINT_FILES.weights}: weight ${name} has shape [${tensor.shape}], config.json needs [${shape}]`,
      );
  }
  for (const [key, tensor] of moments) {
    const shape = shapes.get(key.replace(/^[mv]\./, ""));
    if (!/^[mv]\./.test(key) || !shape || tensor.shape.join() !== shape.join())
      throw new CheckpointInvalid(
        dir,
        "invalid",
        `${CHECKPOINT_FILES.optimizer}: ${key} [${tensor.shape}] does not match any weight of config.json`,
      );
  }
}

async function atomicWrite(path: string, bytes: Buffer): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, bytes);
  await rename(temporary, path);
}
