"""The worker's state and operations: one policy, its optimiser and policy version (one of each per LoRA adapter)
behind one lock, and a generation queue whose scheduler thread decodes every request waiting at once as one batch
(requests arriving during a batch join the next one).

With LoRA the policy holds one or more named adapters on one base model (adapters.py), each with its own AdamW and
policy version; a request names one (absent: the first), or `base` (adapters disabled) to generate and score. A
batch holds one adapter's requests only: the scheduler takes the oldest waiting request's adapter and every waiting
request for that adapter, and the others wait for the next batch. peft can also mix adapters in one batch
(`adapter_names`), but only through PeftModel.forward's inference hooks, and it runs each adapter's rows as a sub-batch
anyway; a batch per adapter decodes each request exactly as it would alone and keeps generation one code path.

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

from . import adapters, checkpoint
from .distributed import broadcast
from .errors import AdapterNotFound, OutOfRange, WorkerError
from .generate import GenerationResult, check_ids, check_prompt, generate
from .model import Policy, eos_token_ids, vocab_size
from .schema import PROTOCOL_VERSION, GenerationRequest, InvalidRequest, LossConfig, OptimizerConfig, TrainRow
from .train import TrainMetrics, check_rows, make_optimizer, score, train_step


@dataclass(eq=False)  # identity: the scheduler removes the very ticket it takes
class _Ticket:
    requests: list[GenerationRequest]
    target: str | None  # an adapter, `base`, or None (full weights)
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
        # The adapters' names (none when every weight trains); state is kept per target: an adapter, or None when
        # the worker trains full weights.
        self.adapters: list[str] = list(policy.lora.adapters) if policy.lora is not None else []
        self._targets: list[str | None] = [*self.adapters] or [None]
        self.optimizers = {t: self._new_optimizer(t) for t in self._targets}
        self.versions = dict.fromkeys(self._targets, 0)
        self._active = self._targets[0]  # what the model applies now (set on every rank alike)
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
            "adapters": list(self.adapters),
            "policy_versions": {a: self.versions[a] for a in self.adapters},
            "device": str(p.device),
            "world_size": self.ranks.world_size,
            "activation_checkpointing": p.activation_checkpointing,
            "dtype": str(p.dtype).removeprefix("torch."),
            "lora": lora,
            "parameters": sum(t.numel() for t in p.model.parameters()),
            "trainable_parameters": sum(t.numel() for t in p.model.parameters() if t.requires_grad),
            "peak_memory_bytes": torch.cuda.max_memory_allocated(p.device) if p.device.type == "cuda" else None,
        }

    @property
    def policy_version(self) -> int:
        """The first adapter's version (the whole model's without LoRA)."""
        return self.versions[self._targets[0]]

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The first adapter's optimiser (the whole model's without LoRA)."""
        return self.optimizers[self._targets[0]]

    def version(self, adapter: str | None = None) -> int:
        """The policy version of `adapter` (None: the first; `base`: always 0).

        Raises AdapterNotFound for a name the worker does not hold."""
        target = self._target(adapter, base=True)
        return 0 if target == adapters.BASE else self.versions[target]

    def generate(self, requests: list[GenerationRequest], adapter: str | None = None) -> list[dict]:
        target = self._target(adapter, base=True)
        for r in requests:
            check_prompt(r.prompt_token_ids, self.policy.context_length, self.vocab)
        ticket = _Ticket(requests, target)
        with self._queued:
            self._queue.append(ticket)
            self._queued.notify()
        ticket.done.wait()
        if ticket.error is not None:
            raise ticket.error
        return [asdict(r) | {"policy_version": ticket.policy_version} for r in ticket.results]

    def logprobs(self, rows: list[list[int]], adapter: str | None = None) -> list[list[float]]:
        target = self._target(adapter, base=True)
        for row in rows:
            if len(row) > self.policy.context_length:
                raise OutOfRange(f"sequence of {len(row)} tokens exceeds the context of {self.policy.context_length} tokens")
            check_ids(row, self.vocab)
        return self._collective("logprobs", target, rows)

    def train_step(
        self, rows: list[TrainRow], loss: LossConfig, optimizer: OptimizerConfig, adapter: str | None = None
    ) -> dict:
        target = self._target(adapter, base=False)
        check_rows(rows, self.policy.context_length, self.vocab, loss)
        return self._collective("train_step", target, rows, loss, optimizer)

    def save_checkpoint(self, directory: str, adapter: str | None = None) -> None:
        self._collective("save_checkpoint", self._target(adapter, base=False), directory)

    def load_checkpoint(self, directory: str, adapter: str | None = None) -> None:
        self._collective("load_checkpoint", self._target(adapter, base=False), directory)

    def reset_optimizer(self, adapter: str | None = None) -> None:
        self._collective("reset_optimizer", self._target(adapter, base=False))

    def stop(self) -> None:
        """Rank 0: ends the other ranks' `follow` loops."""
        if self.ranks.world_size > 1:
            with self._lock:
                self._compute.submit(broadcast, ("stop", None, ())).result()

    def follow(self) -> None:
        """Ranks other than 0: runs each operation rank 0 broadcasts, until "stop". A `WorkerError` (a bad checkpoint)
        is raised on every rank alike and answered by rank 0; anything else ends this rank, and torchrun then stops
        the others and names it."""
        self._use_threads()
        while True:
            op, target, args = broadcast()
            if op == "stop":
                return
            try:
                self._run_op(op, target, args)
            except WorkerError:
                pass

    def _target(self, adapter: str | None, *, base: bool) -> str | None:
        """What a request naming `adapter` runs on: the first target when None, `base` where `base` is allowed.

        Raises InvalidRequest (422) for `base` where it is not, AdapterNotFound for a name the worker lacks."""
        if adapter is None:
            return self._targets[0]
        if adapter == adapters.BASE and self.adapters:
            if base:
                return adapters.BASE
            raise InvalidRequest([{
                "loc": ["body", "adapter"],
                "msg": "'base' (the base model, adapters disabled) only generates and scores: name an adapter to "
                f"train, save, load or reset ({', '.join(self.adapters)})",
                "type": "value_error",
            }])
        if adapter not in self.adapters:
            has = f"the worker has: {', '.join(self.adapters)}" if self.adapters else "the worker trains full weights"
            raise AdapterNotFound(f"no adapter {adapter!r} ({has})")
        return adapter

    def _new_optimizer(self, target: str | None) -> torch.optim.Optimizer:
        module = self.policy.module
        # After a forward without backward (generate, logprobs) FSDP2 leaves the root's own parameters (embeddings,
        # final norm) unsharded: an optimiser built then would hold those temporaries, not the float32 masters.
        module.reshard()
        return make_optimizer(module, None if target is None else adapters.parameters(module, target))

    def _collective(self, op: str, target: str | None, *args):
        with self._lock:
            return self._compute.submit(self._run_collective, op, target, args).result()

    def _run_collective(self, op: str, target: str | None, args: tuple):
        """On the compute thread: broadcasts the operation (and the adapter it runs on) to the other ranks and runs it
        here."""
        self._use_threads()
        if self.ranks.world_size > 1:
            broadcast((op, target, args))
        try:
            return self._run_op(op, target, args)
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

    def _run_op(self, op: str, target: str | None, args: tuple):
        model = self.policy.module
        self._use(target)
        if op == "train_step":
            metrics: TrainMetrics = train_step(model, self.optimizers[target], *args, self.token_budget)
            if not metrics.non_finite_skipped:
                self.versions[target] += 1
            return asdict(metrics)
        if op == "logprobs":
            return score(model, *args, self.token_budget)
        if op == "generate":
            return self._generate(*args)
        if op == "save_checkpoint":
            optimizer, version = self.optimizers[target], self.versions[target]
            return checkpoint.save_checkpoint(self.policy, optimizer, version, *args, target)
        if op == "load_checkpoint":
            checkpoint.load_checkpoint(self.policy, self.optimizers[target], *args, target)
            self.versions[target] += 1
            return None
        if op == "reset_optimizer":
            self.optimizers[target] = self._new_optimizer(target)
            return None
        raise ValueError(f"unknown operation {op!r}")

    def _use(self, target: str | None) -> None:
        """Makes the model apply `target`'s adapter (`base`: none) from now on."""
        if target != self._active:
            adapters.use(self.policy.model, None if target == adapters.BASE else target)
            self._active = target

    def _generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """(the policy version sampled from, the results), with the adapter the model applies now."""
        sync = (lambda step: broadcast(step)) if self.ranks.world_size > 1 else None
        version = 0 if self._active == adapters.BASE else self.versions[self._active]
        return version, generate(
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
                target = self._queue[0].target  # the oldest request's adapter: a batch decodes with one adapter
                for ticket in [t for t in self._queue if t.target == target]:
                    if batch and rows + len(ticket.requests) > self.max_batch_size:
                        break
                    self._queue.remove(ticket)
                    batch.append(ticket)
                    rows += len(ticket.requests)
            self._run(target, batch)

    def _run(self, target: str | None, batch: list[_Ticket]) -> None:
        # Unseeded requests get their seed here, so that every rank samples alike.
        requests = [_seeded(r) for t in batch for r in t.requests]
        try:
            version, results = self._collective("generate", target, requests)
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
