"""Two ranks under torchrun (gloo, CPU) against one: both load exactly the same weights (rank 0 loads, every rank
keeps its shards), the same step gives the same loss and the same updated weights (to 1% of one AdamW step,
`assert_same_update`), for full fine-tuning, LoRA, and with activation checkpointing and chunked logprobs, and two
LoRA adapters trained one after the other each leave the base and the other alone; scoring and seeded generation
agree; a checkpoint written by 2 ranks resumes on 1 exactly as an uninterrupted run; and a rank killed mid-step stops
every rank, the launcher naming it."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import assert_same_update, full_weights, tiny_worker
from ranks_cases import ADAM, PROBE, SCENARIOS, TWO_ADAPTERS, adapter_steps, generation_requests, step

TESTS = Path(__file__).parent
PYTHONPATH = os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])
ENV = os.environ | {"PYTHONPATH": PYTHONPATH, "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("ranks")
    tiny_worker(seed=7).save_checkpoint(str(out / "folder"))  # a Hugging Face folder to load as --model
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(TESTS / "ranks_main.py"), str(out)]
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return out, torch.load(out / "results.pt", weights_only=False)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_two_ranks_load_exactly_the_weights_one_rank_loads(two_ranks, name):
    _, results = two_ranks
    ours = full_weights(tiny_worker(**SCENARIOS[name]).policy.module)
    assert ours.keys() == results[name]["loaded"].keys()
    for key, value in ours.items():
        assert torch.equal(value, results[name]["loaded"][key]), key


def test_two_ranks_load_a_folder_exactly_as_stored(two_ranks):
    out, results = two_ranks
    stored = load_file(out / "folder" / "model.safetensors")
    loaded = {k.removeprefix("lm."): v for k, v in results["folder"].items()}
    assert loaded.keys() == stored.keys()  # a tied output layer is one parameter, stored once
    for key, value in loaded.items():
        assert torch.equal(value, stored[key]), key


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_one_step_on_two_ranks_equals_one_step_on_one(two_ranks, name):
    _, results = two_ranks
    worker = tiny_worker(**SCENARIOS[name])
    metrics = step(worker, 0)
    theirs = results[name]["metrics"]
    assert metrics["tokens"] == theirs["tokens"] == 9
    for key in ("loss", "entropy", "approx_kl", "clip_fraction"):
        assert abs(metrics[key] - theirs[key]) < 1e-5, key
    assert abs(metrics["grad_norm"] - theirs["grad_norm"]) < 1e-4 * metrics["grad_norm"]
    assert_same_update(full_weights(worker.policy.module), results[name]["weights"], ADAM.learning_rate)
    torch.testing.assert_close(worker.logprobs(PROBE), results[name]["logprobs"], atol=1e-5, rtol=0)


def test_two_adapters_train_on_two_ranks_as_on_one_each_leaving_the_other(two_ranks):
    _, results = two_ranks
    theirs = results["adapters"]
    fresh = tiny_worker(lora=TWO_ADAPTERS)
    start = full_weights(fresh.policy.module)
    ours = adapter_steps(fresh)
    for mine, other in zip(ours, theirs["metrics"], strict=True):
        assert mine["tokens"] == other["tokens"]
        assert abs(mine["loss"] - other["loss"]) < 1e-5
        assert abs(mine["grad_norm"] - other["grad_norm"]) < 1e-4 * mine["grad_norm"]
    assert_same_update(full_weights(fresh.policy.module), theirs["weights"], ADAM.learning_rate)
    for name, value in theirs["weights"].items():  # on 2 ranks: the base unchanged, each adapter moved
        assert torch.equal(value, start[name]) == (".lora_B." not in name and ".lora_A." not in name), name
    for target in ("a", "b", "base"):
        torch.testing.assert_close(fresh.logprobs(PROBE, target), theirs["logprobs"][target], atol=1e-5, rtol=0)
    assert theirs["logprobs"]["a"] != theirs["logprobs"]["b"]


def test_seeded_generation_on_two_ranks_equals_one_rank(two_ranks):
    _, results = two_ranks
    worker = tiny_worker()
    step(worker, 0)
    ours = [r.token_ids for r in worker._generate(generation_requests())[1]]
    assert ours == results["full"]["generated"]


@pytest.mark.parametrize("name", ["full", "lora"])
def test_a_checkpoint_of_two_ranks_resumes_on_one_as_an_uninterrupted_run(two_ranks, name):
    out, _ = two_ranks
    uninterrupted, resumed = tiny_worker(**SCENARIOS[name]), tiny_worker(**SCENARIOS[name])
    for k in range(2):
        step(uninterrupted, k)
    resumed.load_checkpoint(str(out / f"checkpoint-{name}"))
    assert json.loads((out / f"checkpoint-{name}" / "arclight.json").read_text())["world_size"] == 2
    step(resumed, 1)
    assert_same_update(full_weights(uninterrupted.policy.module), full_weights(resumed.policy.module), ADAM.learning_rate)


def test_a_rank_killed_mid_step_stops_every_rank_and_the_launcher_names_it(tmp_path):
    argv = [sys.executable, "-m", "arclight_torch", "serve", "--model", "new:qwen2-tiny", "--context-length", "64",
            "--threads", "1", "--nproc-per-node", "2"]
    launcher = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True)
    try:
        url = _listening(launcher)
        rank1 = _rank_pid(launcher.pid, 1)
        body = {
            "rows": [{"token_ids": [1] + [7 + i % 50 for i in range(60)], "loss_mask": [0] + [1] * 60,
                      "advantages": [0] + [1.0] * 60} for _ in range(200)],
            "loss": {"kind": "sft", "aggregation": "token-mean"},
            "optimizer": {"learning_rate": 1e-3, "micro_batch_size": 1},
        }
        answer: list = []
        call = threading.Thread(target=lambda: answer.append(_post(url + "/v1/train_step", body)))
        call.start()
        time.sleep(3.0)
        os.kill(rank1, signal.SIGKILL)
        call.join(timeout=60)
        assert not call.is_alive()
        assert isinstance(answer[0], Exception), f"the step answered {answer[0]!r}"
        launcher.wait(timeout=60)
        assert launcher.returncode == 1
        rest = launcher.stdout.read()
        assert f"arclight-torch: rank 1 failed: pid {rank1} ended with SIGKILL" in rest
        assert _children(launcher.pid) == []
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)


def _listening(launcher) -> str:
    for line in launcher.stdout:
        if "listening on" in line:
            return line.split("listening on ")[1].strip()
    raise AssertionError(f"the launcher exited with {launcher.wait()} before listening")


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def _rank_pid(launcher: int, rank: int) -> int:
    for pid in _children(launcher):
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in environ:
            return pid
    raise AssertionError(f"no rank {rank} under pid {launcher}")


def _post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())
    except Exception as error:  # noqa: BLE001 - the test asserts the call failed
        return error
