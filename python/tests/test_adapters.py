"""Several named LoRA adapters on one base model: each trains, versions, saves and loads on its own, `base` is the
model with adapters disabled, concurrent generation never mixes adapters, and the HTTP answers and CLI refusals."""

import json
import threading
import time

import pytest
import torch

from arclight_torch.cli import main
from arclight_torch.errors import AdapterNotFound, CheckpointInvalid
from arclight_torch.model import LoraSettings
from arclight_torch.schema import (
    GenerationRequest, InvalidRequest, LossConfig, OptimizerConfig, SamplingParams, TrainRow,
)
from conftest import full_weights, serving

TWO = LoraSettings(rank=4, alpha=8.0, targets=("q_proj", "v_proj"), adapters=("a", "b"))
ONE = LoraSettings(rank=4, alpha=8.0, targets=("q_proj", "v_proj"))
PPO = LossConfig(kind="ppo", aggregation="token-mean", clip_low=0.2, clip_high=0.2)
ADAM = OptimizerConfig(learning_rate=5e-2, weight_decay=0.01, max_grad_norm=1.0)
PROBE = [[1, 30, 31, 32, 33, 34], [1, 40, 41]]


def rows(k: int) -> list[TrainRow]:
    return [TrainRow([1, 30 + k, 31, 32, 33], [0, 1, 1, 1, 1], [0, 1.0, -0.5, 1.0, 0.5])]


def requests() -> list[GenerationRequest]:
    return [
        GenerationRequest([1, 5, 6], SamplingParams(temperature=1.0, max_tokens=8, seed=3)),
        GenerationRequest([1, 9], SamplingParams(temperature=0.0, max_tokens=5)),
    ]


def by_owner(weights: dict) -> dict[str, dict]:
    """Weights split into `base` and one dict per adapter."""
    out: dict[str, dict] = {}
    for name, value in weights.items():
        parts = name.split(".")
        owner = next((parts[i + 1] for i, p in enumerate(parts[:-1]) if p.startswith("lora_")), "base")
        out.setdefault(owner, {})[name] = value
    return out


def weights(worker) -> dict:
    """Every parameter gathered whole, after a forward without backward too (which leaves the root unsharded)."""
    worker.policy.module.reshard()
    return full_weights(worker.policy.module)


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def optimizer_state(worker, adapter: str) -> list[torch.Tensor]:
    state = worker.optimizers[adapter].state
    return [t.detach().clone() for s in state.values() for t in s.values() if isinstance(t, torch.Tensor)]


def test_each_adapter_trains_alone_leaving_the_base_and_the_other_adapter_bit_identical(make_worker):
    worker, single = make_worker(lora=TWO), make_worker(lora=ONE)
    start = by_owner(weights(worker))
    worker.train_step(rows(0), PPO, ADAM, "a")
    after_a = by_owner(weights(worker))
    assert not same(after_a["a"], start["a"])
    assert same(after_a["b"], start["b"]) and same(after_a["base"], start["base"])
    assert all(p.grad is None for n, p in worker.policy.module.named_parameters() if ".b." in n)
    assert worker.optimizers["b"].state == {}
    # Adapter a is initialised as a single-adapter worker's adapter (same seed) and steps exactly as it does.
    single.train_step(rows(0), PPO, ADAM)
    assert worker.logprobs(PROBE, "a") == single.logprobs(PROBE)

    a_state = optimizer_state(worker, "a")
    worker.train_step(rows(1), PPO, ADAM, "b")
    after_b = by_owner(weights(worker))
    assert not same(after_b["b"], start["b"])
    assert same(after_b["a"], after_a["a"]) and same(after_b["base"], start["base"])
    assert all(torch.equal(x, y) for x, y in zip(a_state, optimizer_state(worker, "a"), strict=True))
    assert worker.versions == {"a": 1, "b": 1}

    worker.reset_optimizer("a")
    assert worker.optimizers["a"].state == {} and worker.optimizers["b"].state != {}


def test_base_is_the_model_with_adapters_disabled_and_untrained_adapters_answer_as_it(make_worker):
    worker, full = make_worker(lora=TWO), make_worker()
    plain = full.logprobs(PROBE)
    assert worker.logprobs(PROBE, "base") == worker.logprobs(PROBE, "a") == worker.logprobs(PROBE, "b") == plain
    expected = [r["token_ids"] for r in full.generate(requests())]
    assert [r["token_ids"] for r in worker.generate(requests(), "b")] == expected
    worker.train_step(rows(0), PPO, ADAM, "a")
    assert worker.logprobs(PROBE, "a") != plain
    assert worker.logprobs(PROBE, "base") == worker.logprobs(PROBE, "b") == plain
    answers = worker.generate(requests(), "base")
    assert [r["token_ids"] for r in answers] == expected
    assert {r["policy_version"] for r in answers} == {0}


def test_concurrent_generation_gives_each_adapter_the_tokens_it_gives_alone(make_worker):
    worker = make_worker(lora=TWO)
    worker.train_step(rows(0), PPO, ADAM, "a")
    for k in range(2):
        worker.train_step(rows(5 + k), PPO, ADAM, "b")
    targets = ["a", "b", "base"]
    alone = {t: [(r["token_ids"], r["policy_version"]) for r in worker.generate(requests(), t)] for t in targets}
    assert len({json.dumps(v) for v in alone.values()}) == 3  # three different functions
    seen: dict[str, list] = {t: [] for t in targets}

    def call(target: str) -> None:
        for _ in range(3):
            seen[target].append([(r["token_ids"], r["policy_version"]) for r in worker.generate(requests(), target)])

    threads = [threading.Thread(target=call, args=(t,)) for t in targets]
    with worker._lock:  # holds the first batch until the other targets' requests wait in the queue beside it
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10.0
        while len(worker._queue) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    for t in threads:
        t.join()
    for target in targets:
        assert seen[target] == [alone[target]] * 3, target


def test_a_checkpoint_of_one_adapter_loads_into_another(make_worker, tmp_path):
    worker, twin = make_worker(lora=TWO), make_worker(lora=TWO)
    for k in range(2):
        worker.train_step(rows(k), PPO, ADAM, "a")
    worker.save_checkpoint(str(tmp_path), "a")
    state = json.loads((tmp_path / "arclight.json").read_text())
    assert (state["adapter"], state["policy_version"], state["format"]) == ("a", 2, 2)
    untouched_a = by_owner(weights(worker))["a"]
    worker.load_checkpoint(str(tmp_path), "b")
    assert worker.logprobs(PROBE, "b") == worker.logprobs(PROBE, "a")
    assert same(by_owner(weights(worker))["a"], untouched_a)
    assert worker.versions == {"a": 2, "b": 1}
    # The optimiser state came along: a step on b now equals the same step on a (and on a resumed twin).
    twin.load_checkpoint(str(tmp_path), "a")
    for target in ("a", "b"):
        worker.train_step(rows(2), PPO, ADAM, target)
    twin.train_step(rows(2), PPO, ADAM, "a")
    assert worker.logprobs(PROBE, "b") == worker.logprobs(PROBE, "a") == twin.logprobs(PROBE, "a")


def test_a_single_adapter_checkpoint_warm_starts_every_adapter_and_a_bad_one_changes_nothing(make_worker, tmp_path):
    single, worker = make_worker(lora=ONE), make_worker(lora=TWO)
    single.train_step(rows(0), PPO, ADAM)
    single.save_checkpoint(str(tmp_path / "one"))
    assert json.loads((tmp_path / "one" / "arclight.json").read_text())["adapter"] == "default"
    for target in ("a", "b"):
        worker.load_checkpoint(str(tmp_path / "one"), target)
        assert worker.logprobs(PROBE, target) == single.logprobs(PROBE)
    wider = make_worker(lora=LoraSettings(rank=8, alpha=16.0, targets=ONE.targets))
    wider.save_checkpoint(str(tmp_path / "wider"))
    before = weights(worker)
    with pytest.raises(CheckpointInvalid, match="lora_A.default.weight has shape"):
        worker.load_checkpoint(str(tmp_path / "wider"), "b")
    assert same(weights(worker), before)
    assert worker.versions == {"a": 1, "b": 1}


def test_an_adapter_checkpoint_is_a_peft_folder_with_the_same_logprobs(make_worker, tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file

    from arclight_torch.model import _source

    worker = make_worker(lora=TWO)
    worker.train_step(rows(0), PPO, ADAM, "b")
    worker.save_checkpoint(str(tmp_path), "b")
    assert json.loads((tmp_path / "adapter_config.json").read_text())["r"] == 4
    keys = sorted(load_file(tmp_path / "adapter_model.safetensors"))
    assert keys[0] == "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    assert not [k for k in keys if ".b." in k or ".a." in k]
    assert not list(tmp_path.glob("b")) and not list(tmp_path.glob(".peft-*"))
    peft = PeftModel.from_pretrained(_source("new:qwen2-tiny", 0)[3](), str(tmp_path)).eval()
    for row, expected in zip(PROBE, worker.logprobs(PROBE, "b"), strict=True):
        with torch.no_grad():
            logits = peft(input_ids=torch.tensor([row])).logits[0, :-1].float()  # [T - 1, V]
        picked = torch.log_softmax(logits, -1).gather(-1, torch.tensor(row[1:]).unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(picked, torch.tensor(expected[1:]), atol=1e-5, rtol=0)


def test_unknown_adapters_and_base_where_it_cannot_train_are_refused(make_worker):
    worker, full = make_worker(lora=TWO), make_worker()
    with pytest.raises(AdapterNotFound, match=r"no adapter 'x' \(the worker has: a, b\)"):
        worker.logprobs(PROBE, "x")
    with pytest.raises(InvalidRequest, match="only generates and scores"):
        worker.train_step(rows(0), PPO, ADAM, "base")
    with pytest.raises(AdapterNotFound, match="trains full weights"):
        full.generate(requests(), "base")


@pytest.fixture
def two_adapter_client(make_worker):
    with serving(make_worker(lora=TWO)) as served:
        yield served


def test_http_answers_carry_the_named_adapters_version(two_adapter_client, tmp_path):
    client = two_adapter_client
    row = {"token_ids": [1, 30, 31, 32], "loss_mask": [0, 1, 1, 1], "advantages": [0, 1.0, 1.0, 1.0]}
    step = {"rows": [row], "loss": {"kind": "sft", "aggregation": "token-mean"}, "optimizer": {"learning_rate": 1e-2}}
    assert client.post("/v1/train_step", step | {"adapter": "b"})[1]["policy_version"] == 1
    assert client.post("/v1/train_step", step)[1]["policy_version"] == 1  # the first adapter: a
    assert client.post("/v1/train_step", step | {"adapter": "b"})[1]["policy_version"] == 2
    status, info = client.get("/v1/info")
    assert status == 200
    assert (info["adapters"], info["policy_versions"], info["policy_version"]) == (["a", "b"], {"a": 1, "b": 2}, 1)
    generate = {"requests": [{"prompt_token_ids": [1, 2], "sampling": {"seed": 1, "max_tokens": 2}}]}
    for adapter, version in (("a", 1), ("b", 2), ("base", 0)):
        status, body = client.post("/v1/generate", generate | {"adapter": adapter})
        assert (status, body["policy_version"], body["results"][0]["policy_version"]) == (200, version, version)
        status, body = client.post("/v1/logprobs", {"token_ids": [[1, 2, 3]], "adapter": adapter})
        assert (status, body["policy_version"]) == (200, version)
    status, body = client.post("/v1/save_checkpoint", {"dir": str(tmp_path / "b"), "adapter": "b"})
    assert (status, body) == (200, {"policy_version": 2})
    status, body = client.post("/v1/load_checkpoint", {"dir": str(tmp_path / "b"), "adapter": "a"})
    assert (status, body) == (200, {"policy_version": 2})
    assert client.post("/v1/reset_optimizer", {"adapter": "b"}) == (200, {"policy_version": 2})
    assert client.post("/v1/reset_optimizer", {}) == (200, {"policy_version": 2})


def test_http_refuses_unknown_adapters_with_a_404_and_base_or_bad_types_with_a_422(two_adapter_client, tmp_path):
    client = two_adapter_client
    status, body = client.post("/v1/logprobs", {"token_ids": [[1, 2]], "adapter": "x"})
    assert (status, body) == (404, {"detail": "no adapter 'x' (the worker has: a, b)", "code": "adapter_not_found"})
    status, body = client.post("/v1/generate", {"requests": [{"prompt_token_ids": [1]}], "adapter": "c"})
    assert (status, body["code"]) == (404, "adapter_not_found")
    step = {"rows": [{"token_ids": [1, 2], "loss_mask": [0, 1], "advantages": [0, 1]}],
            "loss": {"kind": "sft", "aggregation": "token-mean"}, "optimizer": {"learning_rate": 1e-2}}
    for path, body in (("/v1/train_step", step), ("/v1/save_checkpoint", {"dir": str(tmp_path)}),
                       ("/v1/load_checkpoint", {"dir": str(tmp_path)}), ("/v1/reset_optimizer", {})):
        status, answer = client.post(path, body | {"adapter": "base"})
        assert status == 422, path
        assert answer["detail"][0]["loc"] == ["body", "adapter"] and answer["detail"][0]["type"] == "value_error"
    assert not (tmp_path / "arclight.json").exists()
    status, answer = client.post("/v1/logprobs", {"token_ids": [[1, 2]], "adapter": 3})
    assert (status, answer["detail"][0]["loc"], answer["detail"][0]["type"]) == (422, ["body", "adapter"], "type_error")
    status, answer = client.post("/v1/reset_optimizer", {"adapters": "a"})
    assert (status, answer["detail"][0]["type"]) == (422, "extra_forbidden")


def test_a_worker_without_lora_reports_no_adapters(client):
    status, info = client.get("/v1/info")
    assert (status, info["adapters"], info["policy_versions"]) == (200, [], {})
    status, body = client.post("/v1/logprobs", {"token_ids": [[1, 2]], "adapter": "base"})
    assert (status, body["code"]) == (404, "adapter_not_found")
    assert body["detail"] == "no adapter 'base' (the worker trains full weights)"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--adapters", "a,b"], "--adapters a,b: needs --lora-rank above 0 (the adapters are LoRA adapters)"),
        (["--lora-rank", "4", "--adapters", "a,base"],
         "--adapters a,base: 'base' is reserved (the base model with adapters disabled)"),
        (["--lora-rank", "4", "--adapters", "a,b,a"], "--adapters a,b,a: 'a' is named twice"),
        (["--lora-rank", "4", "--adapters", "a,,b"],
         "--adapters a,,b: '' is not a name (letters, digits, '_' and '-', starting with a letter or digit)"),
        (["--lora-rank", "4", "--adapters", "v1.2"],
         "--adapters v1.2: 'v1.2' is not a name (letters, digits, '_' and '-', starting with a letter or digit)"),
    ],
)
def test_impossible_adapter_flags_are_refused_naming_the_flag(capsys, flags, message):
    assert main(["serve", "--model", "new:qwen2-tiny", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"arclight-torch: {message}"


def test_serve_with_adapters_holds_them_by_name():
    import os
    import subprocess
    import sys
    import urllib.request

    argv = [sys.executable, "-m", "arclight_torch", "serve", "--model", "new:qwen2-tiny", "--lora-rank", "4",
            "--adapters", "planner,coder", "--threads", "1"]
    worker = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy())
    try:
        url = next(line.split("listening on ")[1].strip() for line in worker.stdout if "listening on" in line)
        with urllib.request.urlopen(url + "/v1/info") as response:
            info = json.loads(response.read())
        assert (info["adapters"], info["policy_versions"]) == (["planner", "coder"], {"planner": 0, "coder": 0})
    finally:
        worker.terminate()
        worker.wait(timeout=30)
