"""Baseline for bench/torch-engine.ts: a plain PyTorch training loop (no worker, no HTTP, no packing) on the same
model and batch shape as the torch engine bench: B rows of T random ids, SFT cross-entropy on every next token,
global-norm clip 1, torch AdamW. Prints one JSON line with the mean and best step time.

The steps run on a second thread with `--threads` set on it, as the worker runs them on an HTTP handler thread with
its `--threads`: torch's thread count is per OS thread, and on a loaded 2-core machine two OpenMP threads on the
main thread measured ~6x slower than one (a wrong baseline once gave a protocol/plain ratio of 8.46).

Usage: python bench/torch-plain-loop.py --batch 32 --seq-len 128 --reps 3 --threads 1"""

import argparse
import json
import threading
import time

import torch

from arclight_torch.model import load_policy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="new:qwen2-tiny")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(measure(args)))
    runner.start()
    runner.join()
    print(json.dumps(result))


def measure(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    policy = load_policy(args.model, seed=1, context_length=args.seq_len)
    model = policy.model
    model.eval()  # as the worker: no dropout (Qwen2 has none at rate 0, but eval also skips train-only paths)
    generator = torch.Generator().manual_seed(123)
    ids = torch.randint(0, 256, (args.batch, args.seq_len), generator=generator)  # [B, T]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def step() -> None:
        logits = model(input_ids=ids[:, :-1]).logits.float()  # [B, T-1, V]
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()  # warm-up
    times = []
    for _ in range(args.reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    tokens = args.batch * (args.seq_len - 1)
    return {"tokens": tokens, "mean_s": sum(times) / len(times), "best_s": min(times), "threads": torch.get_num_threads()}


if __name__ == "__main__":
    main()
