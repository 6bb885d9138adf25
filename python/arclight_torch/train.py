"""One optimiser step over training rows, and scoring. Rows are packed into micro-batches by a token budget: a
micro-batch lays its rows end to end, in rows of tokens as wide as its longest (one row for varlen attention), with
per-row position ids (transformers turns restarting position ids into a block-diagonal causal mask, or varlen
attention with flash attention), so padding costs little and no attention spans rows; the value for input position t
is the row's value at token t + 1. The micro-batches are dealt to the ranks in turn (a rank short of one runs a copy
with zero weight, so every rank makes the same FSDP collectives); forward + backward per micro-batch, gradients
summed over micro-batches and ranks (by FSDP's reduce-scatter), global-norm clipping, one AdamW update on the
float32 shards. The non-finite guard of src/engine/nonfinite-guard.ts: recorded logprobs floored, ratios in log
space, and a step whose loss or gradient norm is not finite is skipped (weights, optimiser state and version stay)."""

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from .distributed import all_sum, module_device
from .errors import OutOfRange
from .generate import check_ids
from .loss import TokenTensors, clamp_recorded, micro_batch_loss
from .schema import LossConfig, OptimizerConfig, TrainRow


@dataclass
class TrainMetrics:
    loss: float
    grad_norm: float
    entropy: float
    clip_fraction: float
    approx_kl: float
    tokens: int
    non_finite_skipped: bool = False


def check_rows(rows: list[TrainRow], context_length: int, vocab: int, loss: LossConfig) -> None:
    """Same checks as src/engine/embedded/train-batch.ts `checkRows`; raises OutOfRange naming the row and field."""
    for i, row in enumerate(rows):
        n = len(row.token_ids)
        if n < 2 or n > context_length:
            raise OutOfRange(f"train row {i}: {n} tokens, expected 2..{context_length}")
        check_ids(row.token_ids, vocab)
        for field in ("loss_mask", "advantages", "old_logprobs", "ref_logprobs", "is_weights"):
            values = getattr(row, field)
            if values is not None and len(values) != n:
                raise OutOfRange(f"train row {i}: {field} has {len(values)} values for {n} tokens")
        if loss.kind == "ppo" and loss.kl_coef > 0 and row.ref_logprobs is None:
            raise OutOfRange(f"train row {i}: ref_logprobs are required when kl_coef > 0")
        if loss.aggregation == "weighted" and (row.weight is None or not row.weight >= 0):
            raise OutOfRange(f"train row {i}: weight (>= 0) is required for weighted aggregation")
    for field in ("old_logprobs", "ref_logprobs", "is_weights"):
        given = sum(getattr(r, field) is not None for r in rows)
        if given not in (0, len(rows)):
            raise OutOfRange(f"train rows: {field} given for {given} of {len(rows)} rows (all or none)")


def loss_denominator(rows: list[TrainRow], loss: LossConfig) -> float:
    """Sum of mask * weight over the step's target tokens (positions 1..T-1); the loss's normalizer when constant."""
    if loss.aggregation == "constant":
        return float(loss.normalizer or 0.0)
    total = 0.0
    for row in rows:
        weight = row.weight if loss.aggregation == "weighted" else 1.0
        total += sum(row.loss_mask[1:]) * weight
    return total


def micro_batches(lengths: list[int], max_rows: int, token_budget: int) -> list[range]:
    """Consecutive index ranges with at most `max_rows` rows and at most `token_budget` tokens in all (packed rows:
    no padding); a single longer row still forms its own micro-batch."""
    out, start, tokens = [], 0, 0
    for i, n in enumerate(lengths):
        if i > start and (i - start >= max_rows or tokens + n > token_budget):
            out.append(range(start, i))
            start, tokens = i, 0
        tokens += n
    out.append(range(start, len(lengths)))
    return out


def my_share(count: int) -> list[tuple[int, bool]]:
    """This rank's micro-batches out of `count`, dealt in turn: (index, real). Every rank gets ceil(count / N); a
    rank short of one repeats micro-batch 0 with `real` False (run with zero weight: the collectives line up)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    rounds = -(-count // world)
    return [(i, True) if (i := r * world + rank) < count else (0, False) for r in range(rounds)]


def train_step(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rows: list[TrainRow],
    loss: LossConfig,
    settings: OptimizerConfig,
    token_budget: int,
) -> TrainMetrics:
    """Runs one step in place, on every rank with the same arguments; the caller has checked the rows."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.zero_grad(set_to_none=True)
    sums = accumulate_gradients(module, rows, loss, settings.micro_batch_size, token_budget)
    max_norm = settings.max_grad_norm if settings.max_grad_norm > 0 else math.inf
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    grad_norm = float(norm.full_tensor() if isinstance(norm, DTensor) else norm)
    tokens = int(sums["tokens"])
    metrics = TrainMetrics(
        loss=sums["loss"],
        grad_norm=grad_norm,
        entropy=sums["entropy"] / tokens,
        clip_fraction=sums["clipped"] / tokens,
        approx_kl=sums["kl"] / tokens,
        tokens=tokens,
    )
    if not (math.isfinite(metrics.loss) and math.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        metrics.non_finite_skipped = True
        return metrics
    for group in optimizer.param_groups:
        group["lr"] = settings.learning_rate
        group["weight_decay"] = settings.weight_decay if group["decay"] else 0.0
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return metrics


def accumulate_gradients(
    module: torch.nn.Module,
    rows: list[TrainRow],
    loss: LossConfig,
    max_rows: int,
    token_budget: int,
    *,
    packed: bool = True,
) -> dict[str, float]:
    """Forward + backward of this rank's micro-batches, summing into each weight's `.grad` (FSDP sums over ranks);
    returns the metric sums over all ranks. `packed` False lays each micro-batch out as right-padded rows instead."""
    denominator = loss_denominator(rows, loss)
    if not denominator > 0:
        raise OutOfRange("train_step: no masked token carries weight (sum of loss_mask * weight is 0)")
    chunks = micro_batches([len(r.token_ids) for r in rows], max_rows, token_budget)
    sums = dict.fromkeys(("loss", "entropy", "clipped", "kl", "tokens"), 0.0)
    for index, real in my_share(len(chunks)):
        _accumulate(module, [rows[i] for i in chunks[index]], loss, denominator, sums, real=real, packed=packed)
    return dict(zip(sums, all_sum(list(sums.values()), module_device(module))))


def make_optimizer(model: torch.nn.Module, params: list[torch.nn.Parameter] | None = None) -> torch.optim.AdamW:
    """AdamW over `params` (default: the model's trainable weights; torch defaults: betas 0.9/0.999, eps 1e-8);
    matrices and embeddings decay, biases and norm gains do not (as the embedded engine)."""
    trainable = [p for p in model.parameters() if p.requires_grad] if params is None else params
    decay = [p for p in trainable if p.ndim >= 2]
    rest = [p for p in trainable if p.ndim < 2]
    groups = [{"params": decay, "decay": True}, {"params": rest, "decay": False}]
    # foreach: the per-tensor fallback torch picks for DTensor shards costs ~2x a tiny model's whole step.
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=0.0, weight_decay=0.0, foreach=True)


def _accumulate(module, rows: list[TrainRow], loss: LossConfig, denominator: float, sums: dict, *, real, packed) -> None:
    """Forward + backward of one micro-batch; adds its metric sums into `sums` (nothing when not `real`)."""
    batch = _pack(rows, loss, module_device(module), packed, varlen_attention(module))
    logprobs, entropy = module(input_ids=batch["inputs"], position_ids=batch["positions"], targets=batch["targets"])
    tokens = TokenTensors(
        logprobs=logprobs,
        mask=batch["mask"],
        weights=batch["weights"],
        advantages=batch["advantages"],
        old_logprobs=batch.get("old_logprobs"),
        ref_logprobs=batch.get("ref_logprobs"),
        is_weights=batch.get("is_weights"),
        sequence_ids=batch["sequence_ids"],
    )
    parts = micro_batch_loss(tokens, loss, denominator)
    if not real:
        (parts.loss * 0.0).backward()
        return
    parts.loss.backward()
    sums["loss"] += parts.loss.item()
    sums["entropy"] += float((entropy * batch["mask"]).sum())
    sums["clipped"] += float(parts.clipped_tokens)
    sums["kl"] += float(parts.approx_kl_sum)
    sums["tokens"] += float(batch["mask"].sum())


def _layout(
    lengths: list[int], packed: bool, one_row: bool = False
) -> tuple[tuple[int, int], list[tuple[int, int]], torch.Tensor | None]:
    """Where each sequence of `lengths` goes: (grid shape, each one's (row, offset), position ids or None).

    Packed, the sequences fill rows as wide as the longest one, each going to the first row with room (first fit),
    position ids restarting at 0 for each sequence and for a row's padded tail: lengths [4, 2, 2, 3] → grid [3, 4],
    places (0, 0), (1, 0), (1, 2), (2, 0), positions [[0, 1, 2, 3], [0, 1, 0, 1], [0, 1, 2, 0]]. A dense attention
    mask costs (row width)² per row, so rows no wider than the longest sequence cost what padding would at most,
    where one row of everything would cost (sum of lengths)². `one_row` (varlen attention, whose cost is per
    sequence) lays everything in one row: [4, 2] → grid [1, 6]. Padded → grid [B, max], places (b, 0), no position
    ids (right padding needs none: a real token sees only earlier, real ones)."""
    if not packed:
        return (len(lengths), max(lengths)), [(b, 0) for b in range(len(lengths))], None
    width = sum(lengths) if one_row else max(lengths)
    used: list[int] = []  # tokens taken in each row
    places = []
    for n in lengths:
        row = next((r for r, u in enumerate(used) if u + n <= width), len(used))
        if row == len(used):
            used.append(0)
        places.append((row, used[row]))
        used[row] += n
    positions = torch.zeros((len(used), width), dtype=torch.long)  # [rows, width]
    for n, (row, offset) in zip(lengths, places):
        positions[row, offset : offset + n] = torch.arange(n)
    for row, u in enumerate(used):
        positions[row, u:] = torch.arange(width - u)  # the tail: a sequence of its own, never trained
    return (len(used), width), places, positions


def varlen_attention(module: torch.nn.Module) -> bool:
    """Whether the model's attention takes packed sequences as varlen (flash attention): cost per sequence, one row
    of everything is best. Otherwise (SDPA, eager) packing builds a block-diagonal mask over each row."""
    config = getattr(getattr(module, "lm", module), "config", None)
    return "flash" in str(getattr(config, "_attn_implementation", "") or "")


def _pack(rows: list[TrainRow], loss: LossConfig, device, packed: bool = True, one_row: bool = False) -> dict[str, torch.Tensor]:
    """[R, W] packed (or [B, W] padded) inputs/targets/position ids and flat per-token arrays aligned with targets."""
    shape, places, positions = _layout([len(r.token_ids) - 1 for r in rows], packed, one_row)

    def grid(fill: float = 0.0, dtype=torch.float32) -> torch.Tensor:
        return torch.full(shape, fill, dtype=dtype)

    inputs, targets = grid(0, torch.long), grid(0, torch.long)
    mask, weights, advantages = grid(), grid(), grid()
    sequences = grid(-1, torch.long)  # which row each position belongs to (GSPO's sequences); -1: padding
    optional = {f: grid(1.0 if f == "is_weights" else 0.0) for f in ("old_logprobs", "ref_logprobs", "is_weights")}
    for index, (row, (b, o)) in enumerate(zip(rows, places)):
        n = len(row.token_ids) - 1
        span = slice(o, o + n)
        sequences[b, span] = index
        ids = torch.tensor(row.token_ids)
        inputs[b, span], targets[b, span] = ids[:-1], ids[1:]
        row_mask = torch.tensor(row.loss_mask[1:], dtype=torch.float32)
        trained = row_mask != 0  # values are read only at trained positions (the non-finite guard)
        mask[b, span] = row_mask
        weights[b, span] = row.weight if loss.aggregation == "weighted" else 1.0
        advantages[b, span] = torch.where(trained, torch.tensor(row.advantages[1:], dtype=torch.float32), 0.0)
        for field, values in optional.items():
            if getattr(row, field) is not None:
                recorded = torch.tensor(getattr(row, field)[1:], dtype=torch.float32)
                if field != "is_weights":
                    recorded = clamp_recorded(recorded)
                values[b, span] = torch.where(trained, recorded, values[b, span])
    out = {"inputs": inputs, "targets": targets}
    out |= {"mask": mask.flatten(), "weights": weights.flatten(), "advantages": advantages.flatten()}
    out["sequence_ids"] = sequences.flatten()
    out |= {f: v.flatten() for f, v in optional.items() if getattr(rows[0], f) is not None}
    out = {k: v.to(device) for k, v in out.items()}
    out["positions"] = None if positions is None else positions.to(device)
    return out


@torch.no_grad()
def score(module: torch.nn.Module, rows: list[list[int]], token_budget: int, *, packed: bool = True) -> list[list[float]]:
    """Logprob (nats) of each token given the ones before it; position 0 is 0. Every rank calls it with the same
    rows and scores its share of the micro-batches; every rank returns all of them."""
    device = module_device(module)
    chunks = micro_batches([len(r) for r in rows], 1 << 30, token_budget)
    mine: dict[int, list[list[float]]] = {}
    for index, real in my_share(len(chunks)):
        batch = [rows[i] for i in chunks[index]]
        shape, places, positions = _layout([len(r) for r in batch], packed, varlen_attention(module))
        ids = torch.zeros(shape, dtype=torch.long)  # inputs and targets in one grid: [R, W] or [B, W]
        for r, (b, o) in zip(batch, places):
            ids[b, o : o + len(r)] = torch.tensor(r)
        inputs, targets = ids[:, :-1], ids[:, 1:]  # a packed row's last target is the next row's first token: unused
        positions = None if positions is None else positions[:, :-1].to(device)
        picked, _ = module(input_ids=inputs.to(device), position_ids=positions, targets=targets.to(device))
        picked = picked.view(inputs.shape).cpu()  # [R, W - 1] or [B, W - 1]
        if real:
            mine[index] = [[0.0, *picked[b, o : o + len(r) - 1].tolist()] for r, (b, o) in zip(batch, places)]
    gathered: list[dict] = [{}] * dist.get_world_size()
    if dist.get_world_size() > 1:
        dist.all_gather_object(gathered, mine)
    else:
        gathered = [mine]
    merged = {k: v for part in gathered for k, v in part.items()}
    return [lp for index in range(len(chunks)) for lp in merged[index]]
