"""Checkpoints: LoRA adapters round-trip, resuming equals an uninterrupted run, bad checkpoints leave the weights."""

import json

import pytest
import torch

from arclight_torch.errors import CheckpointInvalid, CheckpointMissing
from arclight_torch.model import LoraSettings
from arclight_torch.schema import LossConfig, OptimizerConfig, TrainRow

LORA = LoraSettings(rank=4, alpha=8.0, targets=("q_proj", "v_proj"))
PPO = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.2)
ADAM = OptimizerConfig(learning_rate=1e-2, weight_decay=0.01, max_grad_norm=1.0)
PROBE = [[1, 30, 31, 32, 33, 34]]


def _step(worker, k: int) -> None:
    rows = [TrainRow([1, 30 + k, 31, 32, 33], [0, 1, 1, 1, 1], [0, 1.0, -0.5, 1.0, 0.5])]
    worker.train_step(rows, PPO, ADAM)


def test_a_lora_checkpoint_is_a_peft_adapter_that_loads_back_exactly(make_worker, tmp_path):
    trained, fresh = make_worker(lora=LORA), make_worker(lora=LORA)
    base_before = {n: p.detach().clone() for n, p in trained.policy.model.named_parameters() if "lora_" not in n}
    for k in range(2):
        _step(trained, k)
    trained.save_checkpoint(str(tmp_path))
    assert (tmp_path / "adapter_model.safetensors").is_file()
    assert json.loads((tmp_path / "adapter_config.json").read_text())["r"] == 4
    assert not (tmp_path / "model.safetensors").exists()
    for n, p in trained.policy.model.named_parameters():
        if "lora_" not in n:
            assert torch.equal(p, base_before[n]), f"{n} changed although only adapters train"
    assert fresh.logprobs(PROBE) != trained.logprobs(PROBE)
    fresh.load_checkpoint(str(tmp_path))
    assert fresh.logprobs(PROBE) == trained.logprobs(PROBE)
    assert fresh.policy_version == 1


@pytest.mark.parametrize("lora", [None, LORA], ids=["full", "lora"])
def test_resuming_from_a_checkpoint_equals_an_uninterrupted_run(make_worker, tmp_path, lora):
    uninterrupted, first, resumed = make_worker(lora=lora), make_worker(lora=lora), make_worker(lora=lora)
    for k in range(4):
        _step(uninterrupted, k)
    for k in range(2):
        _step(first, k)
    first.save_checkpoint(str(tmp_path))
    resumed.load_checkpoint(str(tmp_path))
    for k in range(2, 4):
        _step(resumed, k)
    assert resumed.logprobs(PROBE) == uninterrupted.logprobs(PROBE)


def test_loading_a_checkpoint_of_another_shape_fails_and_keeps_the_weights(make_worker, tmp_path):
    full, lora = make_worker(), make_worker(lora=LORA)
    lora.save_checkpoint(str(tmp_path / "adapter"))
    before = full.logprobs(PROBE)
    with pytest.raises(CheckpointInvalid, match="LoRA adapter"):
        full.load_checkpoint(str(tmp_path / "adapter"))
    with pytest.raises(CheckpointMissing):
        full.load_checkpoint(str(tmp_path / "nothing"))
    wider = make_worker(lora=LoraSettings(rank=8, alpha=16.0, targets=LORA.targets))
    wider_before = wider.logprobs(PROBE)
    with pytest.raises(CheckpointInvalid, match="lora_A.default.weight has shape"):
        wider.load_checkpoint(str(tmp_path / "adapter"))
    assert wider.logprobs(PROBE) == wider_before
    assert full.logprobs(PROBE) == before
    assert full.policy_version == 0


def test_a_full_checkpoint_is_a_model_folder_that_loads_with_the_same_ids_and_logprobs(worker, tmp_path):
    # transformers loads a qwen2 folder's tokenizer as Qwen2Tokenizer, which rebuilds Qwen2's pre-tokenizer; the
    # bundled tokenizer uses the same one, so a saved new:qwen2-tiny tokenizes exactly as before.
    from arclight_torch.model import load_policy

    _step(worker, 0)
    worker.save_checkpoint(str(tmp_path))
    reloaded = load_policy(str(tmp_path), context_length=64)
    text = "<|im_start|>user\nWhat is 12+7? five times (two plus sixteen)<|im_end|>\n"
    assert reloaded.tokenizer.encode(text) == worker.policy.tokenizer.encode(text)
    assert reloaded.tokenizer.chat_template == worker.policy.tokenizer.chat_template
    from arclight_torch.worker import Worker

    assert Worker(reloaded).logprobs(PROBE) == worker.logprobs(PROBE)
