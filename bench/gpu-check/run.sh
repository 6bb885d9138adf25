#!/usr/bin/env bash
# The prepared GPU check, for a machine with PyTorch, transformers and peft (no Node.js, no vLLM needed), from the
# repository root with python/ on the path: check.py drives the worker over HTTP on Qwen2-0.5B's shape (LoRA and
# full, generation and training), then scale.py trains at real size on one GPU (Qwen2.5-7B's shape with LoRA at
# 8k tokens, Qwen2.5-1.5B's with full fine-tuning; bf16 compute, float32 masters; checkpointing on and off).
# Extra arguments pass to check.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
PYTHONPATH=python python3 bench/gpu-check/check.py "$@"
PYTHONPATH=python exec python3 bench/gpu-check/scale.py
