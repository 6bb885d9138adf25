"""Every bundled architecture family trains, scores packed rows as padded ones, generates, and checkpoints to a
folder transformers loads unchanged with the same logprobs: Qwen2/Qwen2.5 (qwen2-tiny), Qwen3, Llama 3.2 (llama3
rope scaling), and Qwen3-MoE (8 experts, top 2)."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from arclight_torch.model import load_policy
from arclight_torch.schema import GenerationRequest, LossConfig, OptimizerConfig, SamplingParams, TrainRow
from arclight_torch.train import score
from arclight_torch.worker import Worker

SFT = LossConfig(kind="sft", aggregation="token-mean")
PROBE = [[1, 30, 31, 32, 33, 34], [1, 40, 41], [1, 50, 51, 52]]


@pytest.mark.parametrize("name", ["qwen2-tiny", "qwen3-tiny", "llama3-tiny", "qwen3-moe-tiny"])
def test_each_architecture_trains_scores_generates_and_saves_a_transformers_folder(name, tmp_path):
    worker = Worker(load_policy(f"new:{name}", context_length=64), token_budget=256)
    packed = score(worker.policy.module, PROBE, 1024)
    padded = score(worker.policy.module, PROBE, 1024, packed=False)
    torch.testing.assert_close(packed, padded, atol=1e-5, rtol=0)
    rows = [TrainRow([1, 20, 21, 22, 23], [0, 1, 1, 1, 1], [0] * 5), TrainRow([1, 24, 25], [0, 1, 1], [0] * 3)]
    first = worker.train_step(rows, SFT, OptimizerConfig(learning_rate=3e-3))["loss"]
    for _ in range(4):
        last = worker.train_step(rows, SFT, OptimizerConfig(learning_rate=3e-3))["loss"]
    assert last < first
    request = GenerationRequest([1, 5, 6], SamplingParams(temperature=1.0, max_tokens=5, seed=1))
    assert len(worker.generate([request])[0]["token_ids"]) == 5
    worker.save_checkpoint(str(tmp_path))
    model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32)
    ids = torch.tensor([PROBE[0]])
    expected = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1).gather(-1, ids[0, 1:, None]).squeeze(-1)
    torch.testing.assert_close(worker.logprobs(PROBE[:1])[0][1:], expected.tolist(), atol=1e-5, rtol=0)
