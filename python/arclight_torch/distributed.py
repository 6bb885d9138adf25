"""The worker's ranks on torch.distributed: the process group (started by torchrun, or a one-rank group in-process),
each rank's device, and the channel by which rank 0 drives the others. Rank 0 serves HTTP; every operation that
touches the weights is broadcast (its name and arguments, `broadcast_object_list`) and run by every rank, so the
collectives of FSDP line up. World size 1 is the same code path with a group of one."""

import os
import sys
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.tensor import DTensor

# Long enough for a large model's step on a slow rank; a dead rank surfaces sooner as a closed connection.
COLLECTIVE_TIMEOUT = timedelta(minutes=30)


@dataclass(frozen=True)
class Ranks:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device


def init_ranks(device: str = "cpu") -> Ranks:
    """Joins torchrun's process group (env `RANK`, `WORLD_SIZE`, …), or makes a one-rank group in this process.

    `device`: `cpu`, or `cuda` / `cuda:N` (under torchrun each rank takes `cuda:LOCAL_RANK`). Idempotent."""
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) if launched else 0
    if device.startswith("cuda") and launched:
        device = f"cuda:{local_rank}"
    target = torch.device(device)
    if target.type == "cuda":
        torch.cuda.set_device(target)
    if not dist.is_initialized():
        backend = "cpu:gloo,cuda:nccl" if target.type == "cuda" else "gloo"
        if launched:
            dist.init_process_group(backend, timeout=COLLECTIVE_TIMEOUT, device_id=target if target.type == "cuda" else None)
        else:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=COLLECTIVE_TIMEOUT)
    return Ranks(dist.get_rank(), dist.get_world_size(), local_rank, target)


def broadcast(value=None):
    """Rank 0's `value`, on every rank (any picklable object)."""
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_sum(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sum over the ranks (float64)."""
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    if dist.get_world_size() > 1:
        dist.all_reduce(tensor)
    return tensor.tolist()


def module_device(module: torch.nn.Module) -> torch.device:
    """Where `module`'s parameters (their local shards) live."""
    param = next(module.parameters())
    return param.to_local().device if isinstance(param, DTensor) else param.device


def launch(argv: list[str], *, nproc_per_node: int, nnodes: str, rdzv_endpoint: str | None, node_rank: int) -> int:
    """Runs `python -m arclight_torch ARGV` as `nproc_per_node` ranks per node through torch.distributed.run (torchrun's
    own entry: its rendezvous, its monitoring, and when one rank fails it stops the others and names the failed rank).

    Returns torchrun's exit status."""
    from torch.distributed.run import main as torchrun

    args = [f"--nproc-per-node={nproc_per_node}", f"--nnodes={nnodes}", "--max-restarts=0"]
    if rdzv_endpoint:
        args += ["--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}", f"--node-rank={node_rank}"]
    else:
        args += ["--standalone"]
    # The ranks' parent is this launcher: they watch it, as it watches whoever started it (cli.watch_parent).
    os.environ["ARCLIGHT_PARENT_PID"] = str(os.getpid())
    try:
        torchrun([*args, "-m", "arclight_torch", *argv])
    except ChildFailedError as error:
        rank, failure = error.get_first_failure()
        how = failure.signal_name() if failure.exitcode < 0 else f"exit code {failure.exitcode}"
        line = f"arclight-torch: rank {rank} failed: pid {failure.pid} ended with {how}; torchrun stopped the other ranks"
        # stdout too: the arclight process that started this launcher reads it (and names the rank in its error).
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        return 1
    except SignalException as stop:  # SIGTERM/SIGINT to the launcher: torchrun has stopped the ranks
        return 128 + int(stop.sigval)
    return 0
