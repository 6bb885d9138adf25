"""`arclight-torch serve`: loads a policy and serves the remote-engine protocol. Prints
`arclight-torch listening on http://HOST:PORT` once ready (the TS side waits for that line)."""

import argparse
import os
import sys
import threading
import time

import torch

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
    serve.add_argument("--seed", type=int, default=0, help="weight init seed for new:NAME")
    serve.add_argument("--context-length", type=int, default=None, help="default: max_position_embeddings")
    serve.add_argument("--micro-batch-tokens", type=int, default=16384, help="token budget of one micro-batch")
    serve.add_argument("--max-batch-size", type=int, default=64, help="most sequences decoded together")
    serve.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 keeps torch's default")
    return root


def watch_parent(server) -> None:
    """Shuts the server down once the process named by ARCLIGHT_PARENT_PID (set by the arclight process that started
    this worker) is no longer this process's parent: that parent died, even by SIGKILL, and stops nothing itself."""
    try:
        parent = int(os.environ.get("ARCLIGHT_PARENT_PID", ""))
    except ValueError:
        return
    if parent < 2:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        server.shutdown()

    threading.Thread(target=watch, name="arclight-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"arclight-torch: --device {args.device}: CUDA is not available to this torch", file=sys.stderr)
        return 2
    if args.lora_rank < 0:
        print(f"arclight-torch: --lora-rank {args.lora_rank}: expected 0 (train every weight) or a positive rank",
              file=sys.stderr)
        return 2
    lora = None
    if args.lora_rank > 0:
        targets = tuple(t for t in args.lora_targets.split(",") if t)
        lora = LoraSettings(args.lora_rank, args.lora_alpha or 2.0 * args.lora_rank, targets)
    try:
        policy = load_policy(
            args.model,
            device=args.device,
            dtype=args.dtype,
            lora=lora,
            seed=args.seed,
            context_length=args.context_length,
        )
    except ValueError as error:
        print(f"arclight-torch: {error}", file=sys.stderr)
        return 2
    worker = Worker(
        policy, token_budget=args.micro_batch_tokens, max_batch_size=args.max_batch_size, threads=args.threads
    )
    server = make_server(worker, args.host, args.port)
    host, port = server.server_address[:2]
    print(f"arclight-torch listening on http://{host}:{port}", flush=True)
    watch_parent(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
