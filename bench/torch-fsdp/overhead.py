"""The sharded worker through its protocol against a plain torchrun FSDP2 loop (plain_fsdp.py) on the same model,
rows and loss, 2 gloo ranks each, on CPU. Both run side by side and take turns, one step each per round (A, B, A,
B, ...), so both see the same machine load; prints each round's times, the medians and the ratio plain / worker
(target >= 0.90: the worker costs at most ~10% more per step).

The worker's time is the HTTP call of POST /v1/train_step as a client sees it: JSON in and out, the broadcast to
rank 1, packing each micro-batch into one row, logprobs in chunks of --logprob-chunk positions, the metric sums.
The plain loop's is from the line on its stdin to its answer.

    PYTHONPATH=python nice -n 10 python bench/torch-fsdp/overhead.py [--model qwen2-tiny] [--rows 16] [--tokens 128]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from plain_fsdp import batch  # noqa: E402 - the same rows on both sides

HERE = Path(__file__).parent


def start_worker(args) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "arclight_torch", "serve", "--model", f"new:{args.model}", "--threads", str(args.threads),
            "--context-length", str(args.tokens), "--micro-batch-tokens", str(args.rows * args.tokens),
            "--logprob-chunk", str(args.logprob_chunk), "--dtype", args.dtype, "--nproc-per-node", str(args.ranks)]
    worker = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env())
    for line in worker.stdout:
        if "listening on" in line:
            return worker, line.split("listening on ")[1].strip()
    raise RuntimeError(f"the worker exited with {worker.wait()} before listening")


def start_plain(args) -> subprocess.Popen:
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={args.ranks}",
            str(HERE / "plain_fsdp.py"), "--model", args.model, "--rows", str(args.rows), "--tokens", str(args.tokens),
            "--dtype", args.dtype, "--threads", str(args.threads)]
    plain = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=_env())
    if "ready" not in plain.stdout.readline():
        raise RuntimeError(f"the plain loop exited with {plain.wait()} before it was ready")
    return plain


def _env() -> dict:
    return os.environ | {"OMP_NUM_THREADS": "1"}


def worker_step(url: str, seed: int, args, vocab: int) -> tuple[float, dict]:
    ids, advantages = batch(seed, args.rows, args.tokens, vocab)
    rows = [{"token_ids": r.tolist(), "loss_mask": [0] + [1] * (args.tokens - 1),
             "advantages": [0.0] + [float(a)] * (args.tokens - 1)} for r, a in zip(ids, advantages)]
    body = {"rows": rows, "loss": {"kind": "ppo", "aggregation": "token-mean", "clip_low": 0.2, "clip_high": 0.28,
                                   "kl_coef": 0.0},
            "optimizer": {"learning_rate": 1e-5, "weight_decay": 0.0, "max_grad_norm": 1.0,
                          "micro_batch_size": args.rows // args.ranks}}
    start = time.perf_counter()
    request = urllib.request.Request(url + "/v1/train_step", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())
    return time.perf_counter() - start, answer["metrics"]


def plain_step(plain: subprocess.Popen, seed: int) -> tuple[float, dict]:
    start = time.perf_counter()
    plain.stdin.write(f"step {seed}\n")
    plain.stdin.flush()
    answer = json.loads(plain.stdout.readline())
    return time.perf_counter() - start, answer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen2-tiny", help="a bundled config (new:NAME on the worker's side)")
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128, help="tokens per row")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank, both sides")
    parser.add_argument("--logprob-chunk", type=int, default=1024)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    worker, url = start_worker(args)
    plain = start_plain(args)
    try:
        with urllib.request.urlopen(url + "/v1/info") as response:
            vocab = json.loads(response.read())["vocab_size"]
        print(f"{args.model}, {args.ranks} ranks (gloo, {args.threads} thread each), {args.rows} rows x {args.tokens} "
              f"tokens, PPO, AdamW, {args.dtype}; load average {os.getloadavg()[0]:.1f}", flush=True)
        worker_step(url, 0, args, vocab)  # warm-up: FSDP's lazy init, AdamW's state
        plain_step(plain, 0)
        ours, theirs = [], []
        for k in range(1, args.rounds + 1):
            w, metrics = worker_step(url, k, args, vocab)
            p, answer = plain_step(plain, k)
            ours.append(w)
            theirs.append(p)
            print(f"round {k}: worker {w:.3f} s (loss {metrics['loss']:+.5f})   plain {p:.3f} s "
                  f"(loss {answer['loss']:+.5f})", flush=True)
        mw, mp = statistics.median(ours), statistics.median(theirs)
        print(f"median: worker {mw:.3f} s, plain {mp:.3f} s; ratio plain / worker {mp / mw:.2f} (target >= 0.90); "
              f"load average {os.getloadavg()[0]:.1f}")
    finally:
        plain.stdin.write("stop\n")
        plain.stdin.close()
        plain.wait(timeout=60)
        worker.terminate()
        worker.wait(timeout=60)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
