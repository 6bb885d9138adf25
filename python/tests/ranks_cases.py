"""The cases test_ranks.py runs on 1 and on 2 ranks: one PPO step on rows that split into more micro-batches than
ranks (so one rank also runs a zero-weight copy), for full fine-tuning, LoRA, and with activation checkpointing and
small logprob chunks; and two LoRA adapters, each stepped on its own rows."""

from arclight_torch.model import LoraSettings
from arclight_torch.schema import GenerationRequest, LossConfig, OptimizerConfig, SamplingParams, TrainRow

LORA = LoraSettings(rank=4, alpha=8.0, targets=("q_proj", "v_proj"))
PPO = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.28, kl_coef=0.0)
ADAM = OptimizerConfig(learning_rate=1e-3, weight_decay=0.01, max_grad_norm=1.0, micro_batch_size=1)
PROBE = [[1, 30, 31, 32, 33, 34], [1, 40, 41], [1, 50, 51, 52]]
SCENARIOS = {
    "full": {},
    "lora": {"lora": LORA},
    "checkpointed-chunked": {"activation_checkpointing": True, "logprob_chunk": 2},
}


def rows(k: int) -> list[TrainRow]:
    return [
        TrainRow([1, 7 + k, 8, 9, 10, 11, 12], [0, 0, 1, 1, 1, 1, 1], [0, 0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        TrainRow([1, 11, 12 + k], [0, 1, 1], [0, -0.5, -0.5]),
        TrainRow([1, 13, 14, 15 + k], [0, 0, 1, 1], [0, 0, 2.0, 2.0]),
    ]


def step(worker, k: int) -> dict:
    return worker.train_step(rows(k), PPO, ADAM)


TWO_ADAPTERS = LoraSettings(rank=4, alpha=8.0, targets=("q_proj", "v_proj"), adapters=("a", "b"))


def adapter_steps(worker) -> list[dict]:
    """A step on adapter a, then one on b on other rows."""
    return [worker.train_step(rows(0), PPO, ADAM, "a"), worker.train_step(rows(1), PPO, ADAM, "b")]


def generation_requests() -> list[GenerationRequest]:
    return [
        GenerationRequest([1, 5, 6], SamplingParams(temperature=1.0, max_tokens=6, seed=3)),
        GenerationRequest([1, 9], SamplingParams(temperature=0.0, max_tokens=4)),
    ]
