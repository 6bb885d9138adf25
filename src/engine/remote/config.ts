/**
 * @module Configuration of the torch engine (one strict zod schema, every field defaulted): how arclight starts a
 * torch worker or which running one it uses. `arclight train` YAML (`engine:` with `kind: torch`) and
 * `arclight engine serve --engine torch` both parse into it; `openTorchEngine` turns it into a `RemoteEngine`.
 */
import { z } from "zod";
import { RemoteEngine } from "./remote-engine.js";
import type { TorchWorkerOptions } from "./worker-process.js";

/** LoRA adapters of the torch engine. */
export const LoraConfigSchema = z.strictObject({
  rank: z.number().int().min(1).default(16).describe("LoRA rank r"),
  alpha: z.number().gt(0).nullable().default(null).describe("LoRA alpha (scaling numerator); null: 2 × rank"),
  targets: z
    .array(z.string().min(1))
    .min(1)
    .default(["q_proj", "v_proj"])
    .describe("Module names that get adapters (e.g. q_proj, k_proj, v_proj, o_proj)"),
});

/** Torch engine settings. */
export const TorchEngineConfigSchema = z.strictObject({
  python: z
    .string()
    .min(1)
    .default("python3")
    .describe("torch: Python interpreter with the arclight-torch package (pip install ./python)"),
  device: z.string().min(1).default("cpu").describe("torch: cpu, cuda, cuda:1, …"),
  dtype: z
    .enum(["float32", "bfloat16", "float16"])
    .default("float32")
    .describe("torch: compute dtype (parameters and optimizer state stay float32)"),
  lora: LoraConfigSchema.nullable().default(null).describe("torch: LoRA adapters; null trains every weight"),
  url: z
    .string()
    .url()
    .nullable()
    .default(null)
    .describe("torch: base URL of a running worker (arclight-torch serve); null: arclight starts one"),
  context_length: z
    .number()
    .int()
    .min(2)
    .nullable()
    .default(null)
    .describe("torch: longest prompt + response (tokens); null: the model's max_position_embeddings"),
  micro_batch_tokens: z
    .number()
    .int()
    .min(1)
    .default(16384)
    .describe(
      "torch: token budget of one training micro-batch (rows packed end to end; gradient accumulation above it)",
    ),
  activation_checkpointing: z
    .boolean()
    .default(false)
    .describe("torch: recompute each decoder layer's activations in backward (less memory, ~1/3 more compute)"),
  logprob_chunk: z
    .number()
    .int()
    .min(0)
    .default(1024)
    .describe("torch: positions per application of the output layer for logprobs (0: all at once)"),
  nproc_per_node: z
    .number()
    .int()
    .min(1)
    .nullable()
    .default(null)
    .describe("torch: ranks per node under torchrun, FSDP2-sharded (one per GPU); null: one rank, no torchrun"),
  nnodes: z.number().int().min(1).default(1).describe("torch: nodes of the torchrun rendezvous (with nproc_per_node)"),
  rdzv_endpoint: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("torch: HOST:PORT of the torchrun rendezvous across nodes; null: one node (standalone)"),
  node_rank: z.number().int().min(0).default(0).describe("torch: this node's rank with rdzv_endpoint"),
});

/** Parsed torch engine settings. */
export type TorchEngineConfig = z.infer<typeof TorchEngineConfigSchema>;

/**
 * The worker options a config names.
 * @param model - a local Hugging Face model folder, or `new:NAME` (bundled config, random weights)
 * @param seed - weight-init seed of `new:NAME`
 * @param config - torch settings
 * @returns options for `RemoteEngine.start`
 */
export function torchWorkerOptions(model: string, seed: number, config: TorchEngineConfig): TorchWorkerOptions {
  return {
    python: config.python,
    model,
    seed,
    device: config.device,
    dtype: config.dtype,
    microBatchTokens: config.micro_batch_tokens,
    activationCheckpointing: config.activation_checkpointing,
    logprobChunk: config.logprob_chunk,
    ...(config.nproc_per_node === null
      ? {}
      : {
          ranks: {
            nprocPerNode: config.nproc_per_node,
            nnodes: config.nnodes,
            nodeRank: config.node_rank,
            ...(config.rdzv_endpoint === null ? {} : { rdzvEndpoint: config.rdzv_endpoint }),
          },
        }),
    ...(config.context_length === null ? {} : { contextLength: config.context_length }),
    ...(config.lora === null
      ? {}
      : {
          lora: {
            rank: config.lora.rank,
            ...(config.lora.alpha === null ? {} : { alpha: config.lora.alpha }),
            targets: config.lora.targets,
          },
        }),
  };
}

/**
 * Connects to `config.url`, or starts a worker for `model`.
 * @param model - model folder or `new:NAME` (ignored with `url`: the worker already has its model)
 * @param seed - weight-init seed of `new:NAME`
 * @param config - torch settings
 * @param adapters - named LoRA adapters for a worker started here (`--adapters`); default one
 * @returns the engine; its `close`/`dispose` stops a worker it started
 * @throws {TorchPackageMissing} when arclight starts the worker and `python` lacks the package
 * @throws {TorchWorkerError} when the worker at `url` is unreachable or speaks another protocol
 */
export function openTorchEngine(
  model: string,
  seed: number,
  config: TorchEngineConfig,
  adapters?: readonly string[],
): Promise<RemoteEngine> {
  if (config.url !== null) return RemoteEngine.connect(config.url);
  const options = torchWorkerOptions(model, seed, config);
  return RemoteEngine.start(adapters === undefined ? options : { ...options, adapters });
}
