"""The memory-saving numerics compute the same function: logprobs in chunks of positions equal the whole
log-softmax, packed micro-batches equal right-padded ones, activation checkpointing changes nothing, and bf16
compute keeps float32 masters that an RL-sized learning rate still moves."""

import torch

from conftest import full_weights

from arclight_torch.logprobs import token_logprobs
from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow
from arclight_torch.train import accumulate_gradients

PPO = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.28, kl_coef=0.0)
ADAM = OptimizerConfig(learning_rate=1e-3, weight_decay=0.01, max_grad_norm=1.0)
PROBE = [[1, 30, 31, 32, 33, 34], [1, 40, 41]]


def _rows() -> list[TrainRow]:
    return [
        TrainRow([1, 7, 8, 9, 10, 11, 12], [0, 0, 1, 1, 1, 1, 1], [0, 0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        TrainRow([1, 11, 12], [0, 1, 1], [0, -0.5, -0.5]),
        TrainRow([1, 13, 14, 15], [0, 0, 1, 1], [0, 0, 2.0, 2.0]),
    ]


def test_chunked_logprobs_and_entropy_equal_the_whole_log_softmax_with_the_same_gradient():
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 300, bias=False)
    hidden = torch.randn(37, 16, requires_grad=True)
    targets = torch.randint(0, 300, (37,))
    whole = torch.log_softmax(head(hidden), -1)
    expected = whole.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    expected_entropy = -(whole.exp() * whole).sum(-1)
    (expected_grad,) = torch.autograd.grad(expected.sum(), hidden)
    for chunk in (0, 1, 5, 36, 37, 64):
        logprobs, entropy = token_logprobs(hidden, head, targets, chunk)
        torch.testing.assert_close(logprobs, expected, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(entropy, expected_entropy.detach(), atol=1e-5, rtol=1e-5)
        (grad,) = torch.autograd.grad(logprobs.sum(), hidden)
        torch.testing.assert_close(grad, expected_grad, atol=1e-6, rtol=1e-5)


def test_a_worker_with_small_logprob_chunks_scores_and_trains_as_one_with_whole_ones(make_worker):
    whole, chunked = make_worker(logprob_chunk=0), make_worker(logprob_chunk=3)
    torch.testing.assert_close(chunked.logprobs(PROBE), whole.logprobs(PROBE), atol=1e-5, rtol=0)
    a = whole.train_step(_rows(), PPO, ADAM)
    b = chunked.train_step(_rows(), PPO, ADAM)
    assert abs(a["loss"] - b["loss"]) < 1e-6 and abs(a["entropy"] - b["entropy"]) < 1e-5
    # The gradients, not the updated weights: AdamW's first update of a near-zero gradient is ~lr x its sign, which
    # float32 summation order can flip.
    whole, chunked = make_worker(logprob_chunk=0).policy.module, make_worker(logprob_chunk=3).policy.module
    for module in (whole, chunked):
        accumulate_gradients(module, _rows(), PPO, max_rows=ADAM.micro_batch_size, token_budget=256)
    for x, y in zip(whole.parameters(), chunked.parameters()):
        torch.testing.assert_close(x.grad.full_tensor(), y.grad.full_tensor(), atol=1e-6, rtol=1e-4)


def test_packed_micro_batches_equal_right_padded_ones(make_worker):
    packed, padded = make_worker().policy.module, make_worker().policy.module
    sums_packed = accumulate_gradients(packed, _rows(), PPO, max_rows=8, token_budget=1024, packed=True)
    sums_padded = accumulate_gradients(padded, _rows(), PPO, max_rows=8, token_budget=1024, packed=False)
    assert sums_packed["tokens"] == sums_padded["tokens"] == 9
    assert abs(sums_packed["loss"] - sums_padded["loss"]) < 1e-6
    assert abs(sums_packed["entropy"] - sums_padded["entropy"]) < 1e-4
    for a, b in zip(packed.parameters(), padded.parameters()):
        torch.testing.assert_close(a.grad.full_tensor(), b.grad.full_tensor(), atol=1e-6, rtol=1e-4)
    from arclight_torch.train import score

    torch.testing.assert_close(score(packed, PROBE, 1024), score(padded, PROBE, 1024, packed=False), atol=1e-5, rtol=0)


def test_activation_checkpointing_trains_exactly_as_without(make_worker):
    plain, checkpointed = make_worker(), make_worker(activation_checkpointing=True)
    assert checkpointed.info()["activation_checkpointing"] is True
    for _ in range(2):
        a = plain.train_step(_rows(), PPO, ADAM)
        b = checkpointed.train_step(_rows(), PPO, ADAM)
        assert a == b
    assert plain.logprobs(PROBE) == checkpointed.logprobs(PROBE)
    generated = [w.generate([_request()])[0]["token_ids"] for w in (plain, checkpointed)]
    assert generated[0] == generated[1]


def test_bf16_compute_keeps_float32_masters_and_optimizer_state_that_small_updates_move(make_worker):
    worker = make_worker(dtype="bfloat16")
    before = full_weights(worker.policy.module)
    assert all(p.dtype == torch.float32 for p in before.values())
    worker.train_step(_rows(), PPO, OptimizerConfig(learning_rate=1e-6, max_grad_norm=1.0))
    after = full_weights(worker.policy.module)
    moved = [n for n in before if not torch.equal(before[n], after[n])]
    # A 1e-6 step on a weight of ~0.02 is a relative change of ~5e-5: below bf16's resolution (2^-8 = 3.9e-3), so
    # bf16 parameters would not move at all; the float32 masters do.
    assert len(moved) == len(before)
    state = worker.optimizer.state[next(iter(worker.optimizer.state))]
    assert state["exp_avg"].dtype == torch.float32
    assert worker.info()["dtype"] == "bfloat16"


def _request():
    from arclight_torch.schema import GenerationRequest, SamplingParams

    return GenerationRequest([1, 5, 6], SamplingParams(temperature=1.0, max_tokens=6, seed=3))
