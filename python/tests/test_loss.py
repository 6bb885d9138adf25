"""The Python loss against the shared hand-computed fixture (the TS embedded loss is tested against the same file)."""

import json
from pathlib import Path

import pytest
import torch

from arclight_torch.loss import TokenTensors, micro_batch_loss
from arclight_torch.schema import LossConfig

FIXTURE = Path(__file__).resolve().parents[2] / "test" / "fixtures" / "loss-cases.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


def _tensor(values) -> torch.Tensor | None:
    return None if values is None else torch.tensor(values, dtype=torch.float64)


def _sequence_ids(tokens: dict) -> torch.Tensor | None:
    """A case's `row_width` (rows of that many tokens, row-major) as the worker's per-token sequence ids."""
    width = tokens.get("row_width")
    return None if width is None else torch.arange(len(tokens["logprobs"])) // width


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_loss_matches_the_hand_computed_case(case):
    t = case["tokens"]
    logprobs = torch.tensor(t["logprobs"], dtype=torch.float64, requires_grad=True)
    tokens = TokenTensors(
        logprobs=logprobs,
        mask=_tensor(t["mask"]),
        weights=_tensor(t["weights"]),
        advantages=_tensor(t["advantages"]),
        old_logprobs=_tensor(t.get("old_logprobs")),
        ref_logprobs=_tensor(t.get("ref_logprobs")),
        is_weights=_tensor(t.get("is_weights")),
        sequence_ids=_sequence_ids(t),
    )
    denominator = case["loss"].get("normalizer") or float((tokens.mask * tokens.weights).sum())
    parts = micro_batch_loss(tokens, LossConfig(**case["loss"]), denominator)
    parts.loss.backward()
    expected = case["expected"]
    assert parts.loss.item() == pytest.approx(expected["loss"], abs=1e-9)
    assert float(parts.clipped_tokens) == expected["clipped_tokens"]
    assert float(parts.approx_kl_sum) == pytest.approx(expected["approx_kl_sum"], abs=1e-9)
    assert logprobs.grad.tolist() == pytest.approx(expected["grad_logprobs"], abs=1e-9)


def _train_body(loss: dict) -> dict:
    row = {"token_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "advantages": [0, 1, 1]}
    return {"rows": [row], "loss": loss, "optimizer": {"learning_rate": 0.001}}


def test_the_wire_names_each_objective_and_refuses_unknown_ones():
    from arclight_torch.schema import InvalidRequest, parse_train_step

    base = {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.28}
    _, loss, _ = parse_train_step(_train_body({**base, "aggregation": "constant", "normalizer": 80, "objective": "gspo"}))
    assert (loss.objective, loss.aggregation, loss.normalizer) == ("gspo", "constant", 80.0)
    _, loss, _ = parse_train_step(_train_body({**base, "aggregation": "token-mean"}))
    assert loss.objective == "ppo"
    with pytest.raises(InvalidRequest, match=r"loss\.objective: Input should be 'ppo', 'gspo' or 'cispo'"):
        parse_train_step(_train_body({**base, "aggregation": "token-mean", "objective": "gpso"}))
    with pytest.raises(InvalidRequest, match=r"loss\.normalizer"):
        parse_train_step(_train_body({**base, "aggregation": "constant"}))
