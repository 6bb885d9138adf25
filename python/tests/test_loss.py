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
    )
    denominator = float((tokens.mask * tokens.weights).sum())
    parts = micro_batch_loss(tokens, LossConfig(**case["loss"]), denominator)
    parts.loss.backward()
    expected = case["expected"]
    assert parts.loss.item() == pytest.approx(expected["loss"], abs=1e-9)
    assert float(parts.clipped_tokens) == expected["clipped_tokens"]
    assert float(parts.approx_kl_sum) == pytest.approx(expected["approx_kl_sum"], abs=1e-9)
    assert logprobs.grad.tolist() == pytest.approx(expected["grad_logprobs"], abs=1e-9)
