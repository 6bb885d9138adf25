#!/usr/bin/env bash
# The prepared GPU check, for a machine with PyTorch, transformers and peft (no Node.js, no vLLM needed):
# runs bench/gpu-check/check.py from the repository root with python/ on the path. Extra arguments pass through.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
PYTHONPATH=python exec python3 bench/gpu-check/check.py "$@"
