"""GSPO and the constant normaliser through the worker's training path: a step split into one-row
micro-batches gives the same loss and gradients as one micro-batch of packed rows (GSPO's ratio is per sequence
however sequences are packed; the constant denominator is the step's, not a micro-batch's)."""

import math

import pytest
import torch

from arclight_torch.schema import LossConfig, TrainRow
from arclight_torch.train import accumulate_gradients


def _rows() -> list[TrainRow]:
    # Rows of different lengths with behaviour logprobs, so every row has its own sequence ratio.
    return [
        TrainRow([1, 7, 8, 9, 10], [0, 0, 1, 1, 1], [0, 0, 1.0, 1.0, 1.0], old_logprobs=[0, 0, -5.0, -5.5, -6.0]),
        TrainRow([1, 11, 12], [0, 1, 1], [0, -0.5, -0.5], old_logprobs=[0, -5.2, -5.8]),
        TrainRow([1, 13, 14, 15], [0, 0, 1, 1], [0, 0, 2.0, 2.0], old_logprobs=[0, 0, -6.1, -5.4]),
    ]


LOSSES = [
    LossConfig(kind="ppo", objective="gspo", aggregation="token-mean", clip_low=0.2, clip_high=0.28),
    LossConfig(kind="ppo", aggregation="constant", normalizer=3 * 16, clip_low=0.2, clip_high=0.28),
]


@pytest.mark.parametrize("loss", LOSSES, ids=["gspo", "constant"])
def test_micro_batches_equal_one_batch(make_worker, loss):
    one, many = make_worker().policy.module, make_worker().policy.module
    sums_one = accumulate_gradients(one, _rows(), loss, max_rows=8, token_budget=1024)
    sums_many = accumulate_gradients(many, _rows(), loss, max_rows=1, token_budget=1024)
    assert math.isclose(sums_one["loss"], sums_many["loss"], abs_tol=1e-6)
    grads = [p.grad.full_tensor() for p in one.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    for a, b in zip(one.parameters(), many.parameters()):
        torch.testing.assert_close(a.grad.full_tensor(), b.grad.full_tensor(), atol=1e-6, rtol=1e-4)
