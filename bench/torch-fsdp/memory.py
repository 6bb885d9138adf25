"""Peak RSS per rank of one train step on a Qwen2-shaped model at Qwen's 152k vocabulary (new:qwen2-100m, 89M
parameters, random init) with one row of 2048 tokens, on CPU: 1 and 2 ranks (torchrun, gloo), with and without
activation checkpointing and chunked logprobs; each beside the arithmetic it should follow.

    PYTHONPATH=python nice -n 10 python bench/torch-fsdp/memory.py [--tokens 2048]

Expected per rank, N parameters, W ranks, T tokens, V vocabulary, C hidden, L layers, chunk K:
  state   = 16 B x N / W  (float32 shards: weights 4, gradients 4, AdamW moments 8)
  root    = 4 B x (V x C) (the root unit, embeddings tied to the output layer, is gathered whole on every rank
                           through forward and backward: at V = 152k it dominates small models)
  logits  = 4 B x T x V x 3 (logits, log-softmax and its gradient, float32) without chunking; x K / T with it
  acts    = per-layer activations x L without checkpointing (~ 4 B x T x (14 C + 3 x 1408 + heads x T)), 1 layer's with
plus the Python/torch runtime (~0.35 GB, measured as RSS after import)."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
GB = 1e9


def run(ranks: int, checkpointing: bool, chunk: int, tokens: int) -> list[dict]:
    step = [str(HERE / "memory_step.py"), "--tokens", str(tokens), "--chunk", str(chunk)]
    if checkpointing:
        step.append("--checkpointing")
    if ranks == 1:
        argv = [sys.executable, *step]
    else:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *step]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def expected(n: int, ranks: int, checkpointing: bool, chunk: int, tokens: int) -> dict:
    vocab, hidden, layers, inter, heads = 151936, 512, 4, 1408, 8
    state = 16 * n / ranks
    root = 4 * vocab * hidden
    logits = 4 * tokens * vocab * 3 * (min(chunk, tokens) / tokens if chunk > 0 else 1)
    per_layer = 4 * tokens * (14 * hidden + 3 * inter + heads * tokens)
    acts = per_layer * (1 if checkpointing else layers)
    return {"state": state, "root": root, "logits": logits, "acts": acts, "total": state + root + logits + acts}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--cases", default="1:off:0,1:on:1024,2:on:1024,1:off:1024,1:on:0", help="RANKS:CKPT:CHUNK,...")
    a = parser.parse_args()
    cases = [(int(r), c == "on", int(k)) for r, c, k in (case.split(":") for case in a.cases.split(","))]
    print(f"one SFT step, new:qwen2-100m, 1 row x {a.tokens} tokens, float32, CPU (gloo); GB = 1e9 bytes")
    print("ranks ckpt chunk | peak RSS/rank | after load | expected: state + root + logits + acts = total (+ runtime)")
    for ranks, ckpt, chunk in cases:
        results = run(ranks, ckpt, chunk, a.tokens)
        peak = max(r["peak_rss"] for r in results)
        load = max(r["rss_after_load"] for r in results)
        e = expected(results[0]["parameters"], ranks, ckpt, chunk, a.tokens)
        print(f"{ranks:5d} {'on ' if ckpt else 'off'}  {chunk or 'all':>5} | {peak / GB:13.2f} | {load / GB:10.2f} | "
              f"{e['state'] / GB:.2f} + {e['root'] / GB:.2f} + {e['logits'] / GB:.2f} + {e['acts'] / GB:.2f} = "
              f"{e['total'] / GB:.2f}   (step {max(r['step_s'] for r in results)} s, loss {results[0]['loss']:.4f})",
              flush=True)


if __name__ == "__main__":
    main()
