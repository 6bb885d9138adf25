"""Training steps: micro-batching is exact, non-finite steps are skipped, SFT lowers the loss."""

import math

import torch

from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow
from arclight_torch.train import _layout, accumulate_gradients, micro_batches

PPO = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.28, kl_coef=0.0)
SFT = LossConfig(kind="sft", aggregation="token-mean")


def _rows() -> list[TrainRow]:
    return [
        TrainRow([1, 7, 8, 9, 10], [0, 0, 1, 1, 1], [0, 0, 1.0, 1.0, 1.0]),
        TrainRow([1, 11, 12], [0, 1, 1], [0, -0.5, -0.5]),
        TrainRow([1, 13, 14, 15], [0, 0, 1, 1], [0, 0, 2.0, 2.0]),
    ]


def _weights(worker) -> list[torch.Tensor]:
    return [p.detach().full_tensor().clone() for p in worker.policy.model.parameters()]


def test_micro_batches_split_by_rows_and_packed_token_budget():
    assert [list(r) for r in micro_batches([4, 4, 4, 4], 2, 100)] == [[0, 1], [2, 3]]
    assert [list(r) for r in micro_batches([4, 4, 10, 4], 8, 16)] == [[0, 1], [2, 3]]
    assert [list(r) for r in micro_batches([4, 4, 10, 4], 8, 13)] == [[0, 1], [2], [3]]
    assert [list(r) for r in micro_batches([40], 8, 16)] == [[0]]


def test_gradient_accumulation_over_micro_batches_equals_one_batch(make_worker):
    one, many = make_worker().policy.module, make_worker().policy.module
    sums_one = accumulate_gradients(one, _rows(), PPO, max_rows=8, token_budget=1024)
    sums_many = accumulate_gradients(many, _rows(), PPO, max_rows=1, token_budget=1024)
    assert sums_one["tokens"] == sums_many["tokens"] == 7
    assert math.isclose(sums_one["loss"], sums_many["loss"], abs_tol=1e-6)
    for a, b in zip(one.parameters(), many.parameters()):
        torch.testing.assert_close(a.grad.full_tensor(), b.grad.full_tensor(), atol=1e-6, rtol=1e-4)


def test_a_step_with_a_non_finite_loss_is_skipped_and_keeps_the_weights(worker):
    before = _weights(worker)
    bad = [TrainRow([1, 7, 8], [0, 1, 1], [0, float("nan"), 1.0])]
    metrics = worker.train_step(bad, PPO, OptimizerConfig(learning_rate=1e-2))
    assert metrics["non_finite_skipped"] is True
    assert worker.policy_version == 0
    for a, b in zip(before, _weights(worker)):
        assert torch.equal(a, b)


def test_sft_steps_lower_the_loss_on_their_rows(worker):
    rows = [TrainRow([1, 20, 21, 22, 23], [0, 1, 1, 1, 1], [0] * 5)]
    settings = OptimizerConfig(learning_rate=3e-3, max_grad_norm=1.0)
    first = worker.train_step(rows, SFT, settings)["loss"]
    for _ in range(10):
        last = worker.train_step(rows, SFT, settings)["loss"]
    assert last < first - 0.5
    assert worker.policy_version == 11


def test_threads_apply_on_the_thread_that_trains():
    """torch's thread count is per OS thread: a worker given `threads` sets it on the (handler) thread that trains."""
    import threading

    import torch

    from arclight_torch.model import load_policy
    from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow
    from arclight_torch.worker import Worker

    worker = Worker(load_policy("new:qwen2-tiny", seed=0, context_length=64), token_budget=256, threads=1)
    seen = []

    def train():
        torch.set_num_threads(2)  # a fresh handler thread may start with any count
        row = TrainRow(token_ids=[5, 9, 12, 2], loss_mask=[0, 1, 1, 1], advantages=[0, 0, 0, 0])
        worker.train_step([row], LossConfig(kind="sft", aggregation="token-mean"), OptimizerConfig(learning_rate=1e-3))
        seen.append(torch.get_num_threads())

    thread = threading.Thread(target=train)
    thread.start()
    thread.join()
    assert seen == [1]


def test_packed_rows_fill_rows_as_wide_as_the_longest_first_fit():
    shape, places, positions = _layout([4, 2, 2, 3], packed=True)
    assert shape == (3, 4)
    assert places == [(0, 0), (1, 0), (1, 2), (2, 0)]
    assert positions.tolist() == [[0, 1, 2, 3], [0, 1, 0, 1], [0, 1, 2, 0]]
    shape, places, positions = _layout([4, 2], packed=True, one_row=True)
    assert (shape, places, positions.tolist()) == ((1, 6), [(0, 0), (0, 4)], [[0, 1, 2, 3, 0, 1]])


def test_an_optimizer_reset_after_scoring_still_trains_every_weight(worker):
    """Scoring leaves FSDP's root parameters (embeddings, final norm) unsharded; the new optimiser must still hold the
    sharded float32 masters, or those weights would stop training."""
    from torch.distributed.tensor import DTensor

    worker.logprobs([[1, 2, 3]])
    worker.reset_optimizer()
    held = [p for group in worker.optimizer.param_groups for p in group["params"]]
    assert len(held) == len(list(worker.policy.module.parameters()))
    assert all(isinstance(p, DTensor) for p in held)
    before = _weights(worker)
    worker.train_step(_rows(), SFT, OptimizerConfig(learning_rate=1e-2))
    assert all(not torch.equal(a, b) for a, b in zip(before, _weights(worker)))
