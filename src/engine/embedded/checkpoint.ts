/**
 * @module Checkpoint directories of the embedded engine: `config.json` (the model shape), `model.safetensors` (the
 * weights, policy version in its metadata) and `optimizer.safetensors` (AdamW moments `m.<name>` / `v.<name>`, step
 * and constants in its metadata). Weights and moments are stored as exact float32, so training resumes bit-exactly.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { AdamWConstants } from "./adamw.js";
import { type ModelConfig, parseModelConfig } from "./config.js";
import { decodeSafeTensors, encodeSafeTensors, type SafeTensor } from "./safetensors.js";

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

/**
 * Writes a checkpoint; each file goes to a temporary name first and is renamed, so a crash never leaves a torn file.
 * @param dir - directory (created if missing)
 * @param data - config, weights, optimiser state and policy version
 */
export async function writeCheckpoint(dir: string, data: CheckpointData): Promise<void> {
  await mkdir(dir, { recursive: true });
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
 * Reads a checkpoint written by {@link writeCheckpoint}. A directory without `optimizer.safetensors` (weights only)
 * loads with a fresh optimiser.
 * @param dir - checkpoint directory
 * @returns its contents
 * @throws {Error} with code ENOENT when `config.json` or `model.safetensors` is missing
 * @throws {z.ZodError} for an invalid config
 * @throws {SafeTensorsFormatError} for a corrupt safetensors file
 */
export async function readCheckpoint(dir: string): Promise<CheckpointData> {
  const config = parseModelConfig(JSON.parse(await readFile(join(dir, CHECKPOINT_FILES.config), "utf8")));
  const weightsFile = decodeSafeTensors(await readFile(join(dir, CHECKPOINT_FILES.weights)));
  const optimizerBytes = await readFile(join(dir, CHECKPOINT_FILES.optimizer)).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  const optimizerFile = optimizerBytes ? decodeSafeTensors(optimizerBytes) : { tensors: new Map(), metadata: {} };
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

async function atomicWrite(path: string, bytes: Buffer): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, bytes);
  await rename(temporary, path);
}
