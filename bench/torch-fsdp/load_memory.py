"""Peak host memory (RSS) per rank of loading a model into the worker: `load_policy` alone, no step. Run alone
(1 rank) or under torchrun; each rank prints one JSON line: its peak RSS after importing torch and after loading,
and the bytes of its own float32 parameter shards.

    PYTHONPATH=python nice -n 10 python bench/torch-fsdp/load_memory.py --model new:qwen2-100m
    PYTHONPATH=python nice -n 10 python -m torch.distributed.run --standalone --nproc-per-node=2 \\
        bench/torch-fsdp/load_memory.py --model new:qwen2-100m

Expected: rank 0 holds the whole float32 model once (4 B x N) plus its shard; every other rank its shard
(4 B x N / W) plus one tensor in flight; each on top of the runtime (the RSS after import)."""

import argparse
import json
import resource

import torch
from torch.distributed.tensor import DTensor

from arclight_torch.model import load_policy


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="new:qwen2-100m")
    args = parser.parse_args()
    torch.set_num_threads(1)
    imported = peak_rss()
    policy = load_policy(args.model)
    loaded = peak_rss()
    params = list(policy.module.parameters())
    local = sum((p.to_local() if isinstance(p, DTensor) else p).numel() * p.element_size() for p in params)
    print(json.dumps({"rank": policy.ranks.rank, "world_size": policy.ranks.world_size,
                      "parameters": sum(p.numel() for p in params), "shard_bytes": local,
                      "rss_after_import": imported, "peak_rss_after_load": loaded}), flush=True)


if __name__ == "__main__":
    main()
