"""`arclight-torch serve`: loads a policy and serves the remote-engine protocol. Prints
`arclight-torch listening on http://HOST:PORT` once ready (the TS side waits for that line).

With `--nproc-per-node N` (and `--nnodes`, `--rdzv-endpoint`, `--node-rank` across nodes) this process becomes
torchrun's launcher (torch.distributed.run) for N ranks of `arclight-torch serve` without those flags; rank 0 serves
HTTP, the others follow it. When a rank fails, torchrun stops the others and this launcher prints
`arclight-torch: rank R failed: …` on stdout and stderr and exits 1."""

import argparse
import os
import signal
import sys
import threading
import time

import torch

from . import adapters
from .distributed import launch
from .logprobs import DEFAULT_CHUNK
from .model import DTYPES, LoraSettings, bundled_configs, load_policy
from .server import make_server
from .worker import Worker


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="arclight-torch", description="PyTorch engine worker for arclight")
    sub = root.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a model over the remote-engine protocol")
    serve.add_argument("--model", required=True, help=f"HF model folder, or new:NAME ({', '.join(bundled_configs())})")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    serve.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    serve.add_argument("--lora-rank", type=int, default=0, help="0 trains all weights")
    serve.add_argument("--lora-alpha", type=float, default=None, help="default: 2 x rank")
    serve.add_argument("--lora-targets", default="q_proj,v_proj", help="comma-separated module names")
    serve.add_argument("--adapters", default=None,
                       help="NAME[,NAME...]: one LoRA adapter per name on the one base model, each trained, saved and "
                       "served on its own (requests name one; the first by default); default: one named 'default'")
    serve.add_argument("--seed", type=int, default=0, help="weight init seed for new:NAME")
    serve.add_argument("--context-length", type=int, default=None, help="default: max_position_embeddings")
    serve.add_argument("--micro-batch-tokens", type=int, default=16384, help="token budget of one micro-batch")
    serve.add_argument("--max-batch-size", type=int, default=64, help="most sequences decoded together")
    serve.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 keeps torch's default")
    serve.add_argument("--activation-checkpointing", action="store_true",
                       help="recompute each decoder layer's activations in backward (less memory, ~1/3 more compute)")
    serve.add_argument("--logprob-chunk", type=int, default=DEFAULT_CHUNK,
                       help="positions per application of the output layer when computing logprobs; 0: all at once")
    launch = serve.add_argument_group("ranks (torchrun)")
    launch.add_argument("--nproc-per-node", type=int, default=None,
                        help="start this many ranks per node under torchrun (one per GPU); absent: one rank, no torchrun")
    launch.add_argument("--nnodes", default="1", help="nodes (or MIN:MAX) of the torchrun rendezvous")
    launch.add_argument("--rdzv-endpoint", default=None, help="HOST:PORT of the rendezvous across nodes")
    launch.add_argument("--node-rank", type=int, default=0, help="this node's rank (with --rdzv-endpoint)")
    return root


LAUNCH_FLAGS = {"--nproc-per-node": True, "--nnodes": True, "--rdzv-endpoint": True, "--node-rank": True}


def rank_argv(argv: list[str]) -> list[str]:
    """`argv` without the launcher's flags (`--flag value` and `--flag=value`): what each rank runs."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in LAUNCH_FLAGS:
            skip = True
        elif arg.split("=", 1)[0] not in LAUNCH_FLAGS:
            out.append(arg)
    return out


def watch_parent(stop) -> None:
    """Calls `stop()` once the process named by ARCLIGHT_PARENT_PID (set by the arclight process, or the launcher,
    that started this one) is no longer this process's parent: that parent died, even by SIGKILL, and stops nothing
    itself."""
    try:
        parent = int(os.environ.get("ARCLIGHT_PARENT_PID", ""))
    except ValueError:
        return
    if parent < 2:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        stop()

    threading.Thread(target=watch, name="arclight-parent-watch", daemon=True).start()


def usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags, naming the flag, before anything starts or loads; None when nothing is."""
    try:
        torch.device(args.device)
    except RuntimeError:
        return f"--device {args.device}: expected cpu, cuda or cuda:N"
    if args.nproc_per_node is not None and args.nproc_per_node < 1:
        return f"--nproc-per-node {args.nproc_per_node}: expected 1 or more"
    several_nodes = args.nnodes not in ("1", "1:1")
    if args.nproc_per_node is None and (several_nodes or args.rdzv_endpoint is not None or args.node_rank != 0):
        flag = "--nnodes" if several_nodes else "--rdzv-endpoint" if args.rdzv_endpoint is not None else "--node-rank"
        return f"{flag}: needs --nproc-per-node (the ranks of this node)"
    if several_nodes and args.rdzv_endpoint is None:
        return f"--nnodes {args.nnodes}: needs --rdzv-endpoint HOST:PORT (the rendezvous every node joins)"
    if args.node_rank != 0 and args.rdzv_endpoint is None:
        return f"--node-rank {args.node_rank}: needs --rdzv-endpoint HOST:PORT (and --nnodes above 1)"
    if args.micro_batch_tokens < 1:
        return f"--micro-batch-tokens {args.micro_batch_tokens}: expected 1 or more"
    if args.logprob_chunk < 0:
        return f"--logprob-chunk {args.logprob_chunk}: expected 0 (all positions at once) or more"
    if args.lora_rank < 0:
        return f"--lora-rank {args.lora_rank}: expected 0 (train every weight) or a positive rank"
    if args.adapters is not None:
        if args.lora_rank == 0:
            return f"--adapters {args.adapters}: needs --lora-rank above 0 (the adapters are LoRA adapters)"
        problem = adapters.name_error(args.adapters.split(","))
        if problem is not None:
            return f"--adapters {args.adapters}: {problem}"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    error = usage_error(args)
    if error is not None:
        print(f"arclight-torch: {error}", file=sys.stderr)
        return 2
    if args.nproc_per_node is not None and "LOCAL_RANK" not in os.environ:
        # The launcher ends with whoever started it: SIGTERM makes torchrun stop every rank.
        watch_parent(lambda: os.kill(os.getpid(), signal.SIGTERM))
        return launch(
            rank_argv(argv),
            nproc_per_node=args.nproc_per_node,
            nnodes=args.nnodes,
            rdzv_endpoint=args.rdzv_endpoint,
            node_rank=args.node_rank,
        )
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"arclight-torch: --device {args.device}: CUDA is not available to this torch", file=sys.stderr)
        return 2
    lora = None
    if args.lora_rank > 0:
        targets = tuple(t for t in args.lora_targets.split(",") if t)
        names = tuple(args.adapters.split(",")) if args.adapters is not None else (adapters.DEFAULT,)
        lora = LoraSettings(args.lora_rank, args.lora_alpha or 2.0 * args.lora_rank, targets, names)
    if "LOCAL_RANK" in os.environ:
        # A rank whose launcher is gone (even SIGKILLed) exits at once, loading or not: its peers are going too, and
        # rank 0 must not wait on them to say goodbye.
        watch_parent(lambda: os._exit(0))
    try:
        policy = load_policy(
            args.model,
            device=args.device,
            dtype=args.dtype,
            lora=lora,
            seed=args.seed,
            context_length=args.context_length,
            activation_checkpointing=args.activation_checkpointing,
            logprob_chunk=args.logprob_chunk,
        )
    except ValueError as error:
        print(f"arclight-torch: {error}", file=sys.stderr)
        return 2
    worker = Worker(
        policy, token_budget=args.micro_batch_tokens, max_batch_size=args.max_batch_size, threads=args.threads
    )
    if policy.ranks.rank != 0:
        worker.follow()
        return 0
    server = make_server(worker, args.host, args.port)
    host, port = server.server_address[:2]
    if policy.ranks.world_size > 1:
        print(f"arclight-torch: {policy.ranks.world_size} ranks, rank 0 serves", file=sys.stderr, flush=True)
    print(f"arclight-torch listening on http://{host}:{port}", flush=True)
    if "LOCAL_RANK" not in os.environ:
        watch_parent(server.shutdown)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
