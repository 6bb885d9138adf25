"""GPU check at real size, world size 1, through the worker's own code path (load_policy + Worker.train_step: FSDP2
on one rank, bf16 compute, float32 masters and AdamW state, packed rows, chunked logprobs), random init:

  lora-7b   new:qwen2.5-7b (Qwen2.5-7B's shape, 7.6B), LoRA rank 16 on q/k/v/o, rows of 8192 tokens
  full-1.5b new:qwen2.5-1.5b (Qwen2.5-1.5B's shape, 1.5B), every weight trains, rows of 8192 tokens

each with activation checkpointing on, then off (reported as not fitting when it runs out of memory). Prints one
JSON line per case: train tokens/s, model-FLOPs utilisation, peak GPU memory.

MFU = model FLOPs / s / peak bf16 FLOPs of the GPU. Model FLOPs per token: 6 N (full fine-tuning: forward 2 N,
backward 4 N) or 4 N (LoRA: no gradient of the frozen weights), N = parameters without the input embedding, plus
causal attention 6 L T C (full) / 4 L T C (LoRA) with T the row length; recomputation under checkpointing is not
model FLOPs (PaLM, arXiv:2204.02311, App. B). Peak bf16 dense: H100/H200 SXM 989 TFLOP/s, A100 312; else
--peak-tflops.

    PYTHONPATH=python python bench/gpu-check/scale.py                 # on the GPU machine
    PYTHONPATH=python python bench/gpu-check/scale.py --tiny          # the script itself on CPU (tiny configs)
"""

import argparse
import gc
import json
import time

import torch

from arclight_torch.model import LoraSettings, load_policy
from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow
from arclight_torch.worker import Worker

PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}
CASES = {
    "lora-7b": {"model": "new:qwen2.5-7b", "lora": LoraSettings(16, 32.0, ("q_proj", "k_proj", "v_proj", "o_proj"))},
    "full-1.5b": {"model": "new:qwen2.5-1.5b", "lora": None},
}
TINY = {"lora-7b": "new:qwen2-tiny", "full-1.5b": "new:qwen3-tiny"}


def model_flops_per_token(module: torch.nn.Module, config, tokens: int, lora: bool) -> float:
    embedding = config.vocab_size * config.hidden_size
    n = sum(p.numel() for p in module.parameters()) - embedding
    if getattr(config, "tie_word_embeddings", False):
        n += embedding  # the output layer is a real matmul
    per = 4 if lora else 6
    return per * n + per * config.num_hidden_layers * tokens * config.hidden_size


def run_case(name: str, args, checkpointing: bool) -> dict:
    case = CASES[name]
    model = TINY[name] if args.tiny else case["model"]
    tokens = 48 if args.tiny else args.tokens
    policy = load_policy(model, device=args.device, dtype="bfloat16", lora=case["lora"], context_length=tokens,
                         activation_checkpointing=checkpointing)
    worker = Worker(policy, token_budget=tokens)
    g = torch.Generator().manual_seed(0)
    vocab = policy.model.config.vocab_size
    rows = [TrainRow(torch.randint(3, vocab, (tokens,), generator=g).tolist(), [0] * 64 + [1] * (tokens - 64)
                     if tokens > 64 else [0] + [1] * (tokens - 1), [0.5] * tokens) for _ in range(args.rows)]
    loss = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.28, kl_coef=0.0)
    settings = OptimizerConfig(learning_rate=1e-6, max_grad_norm=1.0, micro_batch_size=1)
    worker.train_step(rows, loss, settings)  # warm-up (allocator, kernels)
    sync = torch.cuda.synchronize if policy.device.type == "cuda" else (lambda: None)
    if policy.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        worker.train_step(rows, loss, settings)
    sync()
    seconds = time.perf_counter() - start
    trained = args.steps * len(rows) * tokens
    flops = model_flops_per_token(policy.module, policy.model.config, tokens, case["lora"] is not None) * trained
    peak = PEAK_TFLOPS.get(next((k for k in PEAK_TFLOPS if k in _device_name(policy.device)), ""), args.peak_tflops)
    out = {
        "case": name, "model": model, "checkpointing": checkpointing, "device": _device_name(policy.device),
        "row_tokens": tokens, "rows_per_step": len(rows), "parameters": sum(p.numel() for p in policy.module.parameters()),
        "train_tokens_per_s": round(trained / seconds, 1),
        "mfu": round(flops / seconds / (peak * 1e12), 4) if peak else None,
        "peak_gpu_memory_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2) if policy.device.type == "cuda" else None,
    }
    del worker, policy
    gc.collect()
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tiny", action="store_true", help="tiny configs on CPU: checks the script, measures nothing")
    parser.add_argument("--device", default=None, help="default cuda (cpu with --tiny)")
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per row")
    parser.add_argument("--rows", type=int, default=2, help="rows per step (each one micro-batch)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up step")
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak bf16 TFLOP/s of an unlisted GPU")
    parser.add_argument("--cases", default="lora-7b,full-1.5b")
    args = parser.parse_args()
    args.device = args.device or ("cpu" if args.tiny else "cuda")
    for name in args.cases.split(","):
        for checkpointing in (True, False):
            try:
                print(json.dumps(run_case(name, args, checkpointing)), flush=True)
            except torch.OutOfMemoryError:
                gc.collect()
                torch.cuda.empty_cache()
                print(json.dumps({"case": name, "checkpointing": checkpointing, "fits": False}), flush=True)


if __name__ == "__main__":
    main()
