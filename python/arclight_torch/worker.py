"""The worker's state and operations: one policy, its optimiser and policy version behind one lock, and a
generation queue whose scheduler thread decodes every request waiting at once as one batch (requests arriving
during a batch join the next one).

Every operation on the weights is collective: rank 0 (which serves HTTP) checks the request, broadcasts the
operation's name and arguments, and every rank runs it (`follow` is the other ranks' loop). Generation runs on every
rank too (a sharded model's forward needs all of them); rank 0 samples and broadcasts each step's tokens."""

import os
import random
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

import torch

from . import checkpoint
from .distributed import broadcast
from .errors import OutOfRange, WorkerError
from .generate import GenerationResult, check_ids, check_prompt, generate
from .model import Policy, eos_token_ids, vocab_size
from .schema import PROTOCOL_VERSION, GenerationRequest, LossConfig, OptimizerConfig, TrainRow
from .train import TrainMetrics, check_rows, make_optimizer, score, train_step


@dataclass
class _Ticket:
    requests: list[GenerationRequest]
    done: threading.Event = field(default_factory=threading.Event)
    results: list[GenerationResult] | None = None
    error: BaseException | None = None
    policy_version: int = 0


class Worker:
    """Serialises every use of the weights; generation is batched across concurrent callers."""

    def __init__(self, policy: Policy, *, token_budget: int = 16384, max_batch_size: int = 64, threads: int = 0):
        self.policy = policy
        # torch's thread count is per OS thread (OpenMP's is): the work runs on the compute thread (rank 0) or the
        # main thread (`follow`), so each sets it before computing (0: torch's).
        self.threads = threads
        self.ranks = policy.ranks
        self.optimizer = make_optimizer(policy.module)
        self.policy_version = 0
        self.token_budget = token_budget
        self.max_batch_size = max_batch_size
        self.vocab = vocab_size(policy)
        self.eos_ids = eos_token_ids(policy)
        self._lock = threading.Lock()
        # Every operation on the weights runs on this one thread: DTensor and FSDP keep caches per thread, and a cold
        # thread (the HTTP server's, one per connection) spent ~4 s more per 2-rank tiny step than a warm one.
        self._compute = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arclight-compute")
        self._queue: list[_Ticket] = []
        self._queued = threading.Condition()
        threading.Thread(target=self._schedule, name="generate", daemon=True).start()

    def info(self) -> dict:
        p = self.policy
        lora = None if p.lora is None else {"rank": p.lora.rank, "alpha": p.lora.alpha, "targets": list(p.lora.targets)}
        return {
            "protocol_version": PROTOCOL_VERSION,
            "model": p.name,
            "vocab_size": self.vocab,
            "context_length": p.context_length,
            "eos_token_ids": sorted(self.eos_ids),
            "policy_version": self.policy_version,
            "device": str(p.device),
            "world_size": self.ranks.world_size,
            "activation_checkpointing": p.activation_checkpointing,
            "dtype": str(p.dtype).removeprefix("torch."),
            "lora": lora,
            "parameters": sum(t.numel() for t in p.model.parameters()),
            "trainable_parameters": sum(t.numel() for t in p.model.parameters() if t.requires_grad),
            "peak_memory_bytes": torch.cuda.max_memory_allocated(p.device) if p.device.type == "cuda" else None,
        }

    def generate(self, requests: list[GenerationRequest]) -> list[dict]:
        for r in requests:
            check_prompt(r.prompt_token_ids, self.policy.context_length, self.vocab)
        ticket = _Ticket(requests)
        with self._queued:
            self._queue.append(ticket)
            self._queued.notify()
        ticket.done.wait()
        if ticket.error is not None:
            raise ticket.error
        return [asdict(r) | {"policy_version": ticket.policy_version} for r in ticket.results]

    def logprobs(self, rows: list[list[int]]) -> list[list[float]]:
        for row in rows:
            if len(row) > self.policy.context_length:
                raise OutOfRange(f"sequence of {len(row)} tokens exceeds the context of {self.policy.context_length} tokens")
            check_ids(row, self.vocab)
        return self._collective("logprobs", rows)

    def train_step(self, rows: list[TrainRow], loss: LossConfig, optimizer: OptimizerConfig) -> dict:
        check_rows(rows, self.policy.context_length, self.vocab, loss)
        return self._collective("train_step", rows, loss, optimizer)

    def save_checkpoint(self, directory: str) -> None:
        self._collective("save_checkpoint", directory)

    def load_checkpoint(self, directory: str) -> None:
        self._collective("load_checkpoint", directory)

    def reset_optimizer(self) -> None:
        self._collective("reset_optimizer")

    def stop(self) -> None:
        """Rank 0: ends the other ranks' `follow` loops."""
        if self.ranks.world_size > 1:
            with self._lock:
                self._compute.submit(broadcast, ("stop", ())).result()

    def follow(self) -> None:
        """Ranks other than 0: runs each operation rank 0 broadcasts, until "stop". A `WorkerError` (a bad checkpoint)
        is raised on every rank alike and answered by rank 0; anything else ends this rank, and torchrun then stops
        the others and names it."""
        self._use_threads()
        while True:
            op, args = broadcast()
            if op == "stop":
                return
            try:
                self._run_op(op, args)
            except WorkerError:
                pass

    def _collective(self, op: str, *args):
        with self._lock:
            return self._compute.submit(self._run_collective, op, args).result()

    def _run_collective(self, op: str, args: tuple):
        """On the compute thread: broadcasts the operation to the other ranks and runs it here."""
        self._use_threads()
        if self.ranks.world_size > 1:
            broadcast((op, args))
        try:
            return self._run_op(op, args)
        except WorkerError:
            raise
        except Exception:
            if self.ranks.world_size > 1:
                self._lost_rank()
            raise

    def _lost_rank(self) -> None:
        """A collective failed: another rank most likely died. torchrun stops this rank and names the failed one;
        until then this call never answers (an error answer would race that report). Across nodes, where the
        failed rank's launcher may be elsewhere, exit after a grace period."""
        traceback.print_exc(file=sys.stderr)
        print("arclight-torch rank 0: a collective operation failed; waiting for torchrun to stop the ranks",
              file=sys.stderr, flush=True)
        time.sleep(30.0)
        os._exit(1)

    def _run_op(self, op: str, args: tuple):
        model = self.policy.module
        if op == "train_step":
            metrics: TrainMetrics = train_step(model, self.optimizer, *args, self.token_budget)
            if not metrics.non_finite_skipped:
                self.policy_version += 1
            return asdict(metrics)
        if op == "logprobs":
            return score(model, *args, self.token_budget)
        if op == "generate":
            return self._generate(*args)
        if op == "save_checkpoint":
            return checkpoint.save_checkpoint(self.policy, self.optimizer, self.policy_version, *args)
        if op == "load_checkpoint":
            checkpoint.load_checkpoint(self.policy, self.optimizer, *args)
            self.policy_version += 1
            return None
        if op == "reset_optimizer":
            # After a forward without backward (generate, logprobs) FSDP2 leaves the root's own parameters
            # (embeddings, final norm) unsharded: an optimiser built then would hold those temporaries, not the
            # float32 masters, and they would stop training.
            model.reshard()
            self.optimizer = make_optimizer(model)
            return None
        raise ValueError(f"unknown operation {op!r}")

    def _generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """(the policy version sampled from, the results)."""
        sync = (lambda step: broadcast(step)) if self.ranks.world_size > 1 else None
        return self.policy_version, generate(
            self.policy.module,
            requests,
            eos_ids=self.eos_ids,
            context_length=self.policy.context_length,
            pad_id=self.policy.tokenizer.pad_token_id or 0,
            decode=lambda ids: self.policy.tokenizer.decode(ids),
            sync=sync,
        )

    def _use_threads(self) -> None:
        if self.threads > 0 and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)

    def _schedule(self) -> None:
        self._use_threads()
        while True:
            with self._queued:
                while not self._queue:
                    self._queued.wait()
                batch, rows = [], 0
                while self._queue and (not batch or rows + len(self._queue[0].requests) <= self.max_batch_size):
                    ticket = self._queue.pop(0)
                    batch.append(ticket)
                    rows += len(ticket.requests)
            self._run(batch)

    def _run(self, batch: list[_Ticket]) -> None:
        # Unseeded requests get their seed here, so that every rank samples alike.
        requests = [_seeded(r) for t in batch for r in t.requests]
        try:
            version, results = self._collective("generate", requests)
            for t in batch:
                t.policy_version = version
            start = 0
            for t in batch:
                t.results, start = results[start : start + len(t.requests)], start + len(t.requests)
        except BaseException as error:  # noqa: BLE001 - handed to every waiting caller, who re-raises it
            for t in batch:
                t.error = error
        for t in batch:
            t.done.set()


def _seeded(request: GenerationRequest) -> GenerationRequest:
    if request.sampling.seed is not None:
        return request
    return replace(request, sampling=replace(request.sampling, seed=random.getrandbits(32)))
