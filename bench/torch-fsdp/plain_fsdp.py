"""The baseline of overhead.py: a plain torchrun FSDP2 training loop, written without arclight's code. Every rank
builds the same seeded model from a bundled config, shards each decoder layer and then the root with `fully_shard`
and `MixedPrecisionPolicy(param_dtype, reduce_dtype=float32)`, and trains with torch AdamW on its half of the rows
(one [rows / ranks, T] batch, no packing), with the policy-gradient loss the worker computes for the same call: PPO
with an asymmetric clip on the ratio to the detached current logprobs, token-mean over the step. Whole logits, no
chunking, no IPC.

Rank 0 reads one line per step on stdin (`step K`, K the data seed), runs the step on every rank (the line is
broadcast) and prints one JSON line (loss, tokens); `stop` ends it. Started by overhead.py:

    python -m torch.distributed.run --standalone --nproc-per-node=2 bench/torch-fsdp/plain_fsdp.py --rows 16 --tokens 128
"""

import argparse
import json
import sys
from importlib import resources

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import AutoConfig, AutoModelForCausalLM

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def batch(seed: int, rows: int, tokens: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The step's rows as overhead.py sends them to the worker: ids [rows, T] and one advantage per row [rows]."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (rows, tokens), generator=g)
    advantages = torch.randn(rows, generator=g)
    return ids, advantages


def build(name: str, dtype: torch.dtype) -> torch.nn.Module:
    config = json.loads((resources.files("arclight_torch") / "assets" / "configs" / f"{name}.json").read_text())
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(config.pop("model_type"), **config), dtype=torch.float32)
    model.eval()
    mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    return model


def step(model, optimizer, ids_B_T: torch.Tensor, advantages_B: torch.Tensor, total_tokens: int) -> float:
    logits = model(input_ids=ids_B_T[:, :-1]).logits.float()  # [B, T-1, V]
    logprobs = torch.log_softmax(logits, -1).gather(-1, ids_B_T[:, 1:].unsqueeze(-1)).squeeze(-1)  # [B, T-1]
    ratio = torch.exp(logprobs - logprobs.detach())
    adv = advantages_B.unsqueeze(-1)  # [B, 1]
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - 0.2, 1 + 0.28) * adv)
    loss = -surrogate.sum() / total_tokens
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    total = loss.detach().clone()
    dist.all_reduce(total)
    return float(total)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen2-tiny")
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = build(args.model, DTYPES[args.dtype])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0, foreach=True)
    share = args.rows // world
    if rank == 0:
        print(json.dumps({"ready": True}), flush=True)
    while True:
        box = [sys.stdin.readline().split() if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        if not box[0] or box[0][0] != "step":
            break
        ids, advantages = batch(int(box[0][1]), args.rows, args.tokens, model.config.vocab_size)
        mine = slice(rank * share, (rank + 1) * share)
        loss = step(model, optimizer, ids[mine], advantages[mine], args.rows * (args.tokens - 1))
        if rank == 0:
            print(json.dumps({"loss": loss, "tokens": args.rows * (args.tokens - 1)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
