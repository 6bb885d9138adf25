"""One rank of the memory benchmark (run by memory.py, alone or under torchrun): loads the model with the given
settings, runs one SFT train step on one row of TOKENS tokens, and prints a JSON line with this rank's peak RSS."""

import argparse
import json
import resource
import time

import torch
from torch.distributed.tensor import DTensor

from arclight_torch.model import load_policy
from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow
from arclight_torch.worker import Worker


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--model", default="new:qwen2-100m")
    args.add_argument("--tokens", type=int, default=2048)
    args.add_argument("--checkpointing", action="store_true")
    args.add_argument("--chunk", type=int, default=1024)
    a = args.parse_args()
    torch.set_num_threads(1)
    policy = load_policy(a.model, context_length=a.tokens, activation_checkpointing=a.checkpointing, logprob_chunk=a.chunk)
    worker = Worker(policy, token_budget=a.tokens)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 500, (a.tokens,), generator=g).tolist()
    row = TrainRow(ids, [0] + [1] * (a.tokens - 1), [0.0] * a.tokens)
    start = time.perf_counter()
    metrics = worker.train_step([row], LossConfig(kind="sft", aggregation="token-mean"), OptimizerConfig(learning_rate=1e-5))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    params = sum(p.numel() for p in policy.module.parameters())
    # This rank's own bytes of float32 parameter shards and AdamW moments (gradients are freed after the step).
    tensors = [*policy.module.parameters(), *(v for s in worker.optimizer.state.values() for v in s.values())]
    state = sum(_local(t).numel() * t.element_size() for t in tensors if t.dim() > 0)
    print(json.dumps({"rank": policy.ranks.rank, "world_size": policy.ranks.world_size, "parameters": params,
                      "rss_after_load": loaded, "state_bytes": state, "peak_rss": peak, "step_s": round(seconds, 2), "loss": metrics["loss"]}),
          flush=True)
    worker.stop()


def _local(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


if __name__ == "__main__":
    main()
