"""One optimiser step over training rows, and scoring: rows are packed right-padded with next-token targets (the
value for input position t is the row's value at token t + 1), split into micro-batches by row count and a token
budget, forward + backward per micro-batch with gradients summed (gradient accumulation), global-norm clipping, one
AdamW update. The non-finite guard of src/engine/nonfinite-guard.ts: recorded logprobs floored, ratios in log space,
and a step whose loss or gradient norm is not finite is skipped (weights, optimiser state and version stay)."""

import math
from dataclasses import dataclass

import torch

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
    """Sum of mask * weight over the step's target tokens (positions 1..T-1)."""
    total = 0.0
    for row in rows:
        weight = row.weight if loss.aggregation == "weighted" else 1.0
        total += sum(row.loss_mask[1:]) * weight
    return total


def micro_batches(lengths: list[int], max_rows: int, token_budget: int) -> list[range]:
    """Consecutive index ranges with at most `max_rows` rows and rows x longest row <= `token_budget` (a single
    longer row still forms its own micro-batch)."""
    out, start, longest = [], 0, 0
    for i, n in enumerate(lengths):
        longest_if = max(longest, n)
        if i > start and (i - start >= max_rows or (i - start + 1) * longest_if > token_budget):
            out.append(range(start, i))
            start, longest_if = i, n
        longest = longest_if
    out.append(range(start, len(lengths)))
    return out


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rows: list[TrainRow],
    loss: LossConfig,
    settings: OptimizerConfig,
    token_budget: int,
) -> TrainMetrics:
    """Runs one step in place; the caller has checked the rows (`check_rows`)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.zero_grad(set_to_none=True)
    sums = accumulate_gradients(model, rows, loss, settings.micro_batch_size, token_budget)
    max_norm = settings.max_grad_norm if settings.max_grad_norm > 0 else math.inf
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
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
    model: torch.nn.Module, rows: list[TrainRow], loss: LossConfig, max_rows: int, token_budget: int
) -> dict[str, float]:
    """Forward + backward over micro-batches, summing into each weight's `.grad`; returns the metric sums."""
    denominator = loss_denominator(rows, loss)
    if not denominator > 0:
        raise OutOfRange("train_step: no masked token carries weight (sum of loss_mask * weight is 0)")
    sums = {"loss": 0.0, "entropy": 0.0, "clipped": 0.0, "kl": 0.0, "tokens": 0.0}
    for chunk in micro_batches([len(r.token_ids) for r in rows], max_rows, token_budget):
        _accumulate(model, [rows[i] for i in chunk], loss, denominator, sums)
    return sums


def make_optimizer(model: torch.nn.Module) -> torch.optim.AdamW:
    """AdamW over the trainable weights (torch defaults: betas 0.9/0.999, eps 1e-8); matrices and embeddings decay,
    biases and norm gains do not (as the embedded engine)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in trainable if p.ndim >= 2]
    rest = [p for p in trainable if p.ndim < 2]
    groups = [{"params": decay, "decay": True}, {"params": rest, "decay": False}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=0.0, weight_decay=0.0)


def _accumulate(model, rows: list[TrainRow], loss: LossConfig, denominator: float, sums: dict) -> None:
    """Forward + backward of one micro-batch; adds its metric sums into `sums`."""
    device = next(model.parameters()).device
    packed = _pack(rows, loss, device)
    # Right padding needs no attention mask: a real token attends only to earlier positions, all real, and padded
    # positions are masked out of the loss. Without a mask, SDPA takes its causal fast path (~2x on CPU).
    logits = model(input_ids=packed["inputs"]).logits.float()  # [B, W, V]
    log_softmax = torch.log_softmax(logits, -1)  # [B, W, V]
    logprobs = log_softmax.gather(-1, packed["targets"].unsqueeze(-1)).squeeze(-1).flatten()  # [B*W]
    with torch.no_grad():
        entropy = -(log_softmax.exp() * log_softmax).sum(-1).flatten()  # [B*W]
    tokens = TokenTensors(
        logprobs=logprobs,
        mask=packed["mask"],
        weights=packed["weights"],
        advantages=packed["advantages"],
        old_logprobs=packed.get("old_logprobs"),
        ref_logprobs=packed.get("ref_logprobs"),
        is_weights=packed.get("is_weights"),
    )
    parts = micro_batch_loss(tokens, loss, denominator)
    parts.loss.backward()
    sums["loss"] += parts.loss.item()
    sums["entropy"] += float((entropy.detach() * packed["mask"]).sum())
    sums["clipped"] += float(parts.clipped_tokens)
    sums["kl"] += float(parts.approx_kl_sum)
    sums["tokens"] += float(packed["mask"].sum())


def _pack(rows: list[TrainRow], loss: LossConfig, device) -> dict[str, torch.Tensor]:
    """Right-padded [B, W] inputs/targets and flat [B*W] per-token arrays aligned with the targets."""
    width = max(len(r.token_ids) for r in rows) - 1
    batch = len(rows)

    def grid(fill: float = 0.0, dtype=torch.float32) -> torch.Tensor:
        return torch.full((batch, width), fill, dtype=dtype)

    inputs, targets = grid(0, torch.long), grid(0, torch.long)
    mask, weights, advantages = grid(), grid(), grid()
    optional = {f: grid(1.0 if f == "is_weights" else 0.0) for f in ("old_logprobs", "ref_logprobs", "is_weights")}
    for b, row in enumerate(rows):
        n = len(row.token_ids) - 1
        ids = torch.tensor(row.token_ids)
        inputs[b, :n], targets[b, :n] = ids[:-1], ids[1:]
        row_mask = torch.tensor(row.loss_mask[1:], dtype=torch.float32)
        trained = row_mask != 0  # values are read only at trained positions (the non-finite guard)
        mask[b, :n] = row_mask
        weights[b, :n] = row.weight if loss.aggregation == "weighted" else 1.0
        advantages[b, :n] = torch.where(trained, torch.tensor(row.advantages[1:], dtype=torch.float32), 0.0)
        for field, values in optional.items():
            if getattr(row, field) is not None:
                recorded = torch.tensor(getattr(row, field)[1:], dtype=torch.float32)
                if field != "is_weights":
                    recorded = clamp_recorded(recorded)
                values[b, :n] = torch.where(trained, recorded, values[b, :n])
    out = {"inputs": inputs, "targets": targets}
    out |= {"mask": mask.flatten(), "weights": weights.flatten(), "advantages": advantages.flatten()}
    out |= {f: v.flatten() for f, v in optional.items() if getattr(rows[0], f) is not None}
    return {k: v.to(device) for k, v in out.items()}


@torch.no_grad()
def score(model: torch.nn.Module, rows: list[list[int]], token_budget: int) -> list[list[float]]:
    """Logprob (nats) of each token given the ones before it; position 0 is 0."""
    device = next(model.parameters()).device
    out: list[list[float]] = []
    for chunk in micro_batches([len(r) for r in rows], 1 << 30, token_budget):
        batch = [rows[i] for i in chunk]
        width = max(len(r) for r in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)  # [B, W], right-padded (no mask needed, see _accumulate)
        for b, r in enumerate(batch):
            ids[b, : len(r)] = torch.tensor(r)
        ids = ids.to(device)
        logits = model(input_ids=ids).logits.float()  # [B, W, V]
        picked = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # [B, W-1]
        picked = picked.cpu()
        out += [[0.0, *picked[b, : len(r) - 1].tolist()] for b, r in enumerate(batch)]
    return out
