"""The worker's non-finite guard against test/fixtures/nonfinite-guard.json (the embedded engine's constants)."""

import json
from pathlib import Path

import pytest
import torch

from arclight_torch.loss import LOG_RATIO_LIMIT, LOGPROB_FLOOR, TokenTensors, clamp_recorded, micro_batch_loss
from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow

FIXTURE = json.loads((Path(__file__).resolve().parents[2] / "test" / "fixtures" / "nonfinite-guard.json").read_text())


def _num(value) -> float:
    return float(value)  # "NaN", "Infinity", "-Infinity" parse too


def test_the_constants_are_the_embedded_engines():
    assert (LOGPROB_FLOOR, LOG_RATIO_LIMIT) == (FIXTURE["logprob_floor"], FIXTURE["log_ratio_limit"])


@pytest.mark.parametrize("case", FIXTURE["clamp_recorded_logprob"], ids=lambda c: str(c["recorded"]))
def test_recorded_logprobs_are_floored(case):
    assert float(clamp_recorded(torch.tensor([_num(case["recorded"])], dtype=torch.float64))) == case["clamped"]


@pytest.mark.parametrize("case", FIXTURE["ppo_token_loss"]["cases"], ids=lambda c: c["what"])
def test_ppo_token_loss_stays_finite(case):
    spec = FIXTURE["ppo_token_loss"]
    config = LossConfig(
        kind="ppo", aggregation="token-mean", clip_low=spec["clip_low"], clip_high=spec["clip_high"],
        dual_clip=spec["dual_clip"],
    )
    one = torch.ones(1, dtype=torch.float64)
    tokens = TokenTensors(
        logprobs=torch.tensor([_num(case["logprob"])], dtype=torch.float64),
        mask=one, weights=one, advantages=torch.tensor([_num(case["advantage"])], dtype=torch.float64),
        old_logprobs=clamp_recorded(torch.tensor([_num(case["old_logprob"])], dtype=torch.float64)),
        ref_logprobs=None, is_weights=None,
    )
    loss = micro_batch_loss(tokens, config, 1.0).loss.item()
    assert loss == pytest.approx(case["loss"], rel=1e-9, abs=1e-12)


def test_a_vllm_minus_9999_old_logprob_trains_finitely(worker):
    # vLLM writes -9999 for a token its sampler gave zero probability; floored to -50 the ratio is capped at e^20.
    row = TrainRow([1, 7, 8], [0, 1, 1], [0, 1.0, 1.0], old_logprobs=[0.0, -9999.0, float("nan")])
    loss = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.2)
    metrics = worker.train_step([row], loss, OptimizerConfig(learning_rate=1e-3))
    assert metrics["non_finite_skipped"] is False
    assert metrics["clip_fraction"] == 1.0
