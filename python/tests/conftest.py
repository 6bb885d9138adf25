"""Shared fixtures: a tiny random Qwen2 policy (bundled config) and a real worker server on a loopback port."""

import contextlib
import json
import threading
import urllib.error
import urllib.request

import pytest
import torch

from arclight_torch.model import LoraSettings, load_policy
from arclight_torch.server import make_server
from arclight_torch.worker import Worker


def tiny_worker(lora: LoraSettings | None = None, seed: int = 0, **policy) -> Worker:
    """A fresh worker on the bundled tiny Qwen2 (0.8M parameters, context 64); `policy`: more `load_policy` keywords."""
    return Worker(load_policy("new:qwen2-tiny", lora=lora, seed=seed, context_length=64, **policy), token_budget=256)


@pytest.fixture
def worker() -> Worker:
    return tiny_worker()


class Client:
    """Minimal JSON client over urllib: returns (status, body)."""

    def __init__(self, url: str):
        self.url = url

    def post(self, path: str, body, *, raw: bytes | None = None) -> tuple[int, dict]:
        data = raw if raw is not None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def get(self, path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + path) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@contextlib.contextmanager
def serving(worker: Worker):
    """The worker's HTTP server on a free loopback port, as a Client; shut down on leaving."""
    server = make_server(worker, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield Client(f"http://{host}:{port}")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def client(worker: Worker):
    with serving(worker) as served:
        yield served


@pytest.fixture
def make_worker():
    """Builds more workers (same seed: same initial weights)."""
    return tiny_worker


def assert_same_update(a: dict, b: dict, learning_rate: float) -> None:
    """Weights after the same optimiser step(s) agree to 1% of one step: AdamW's first update of a weight is about
    `learning_rate` x sign(gradient) whatever the gradient's size, so float32 summation-order differences in a
    near-zero gradient show up as up to ~1e-3 of a step (the stated tolerance of every equivalence test)."""
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=0.01 * learning_rate, rtol=0, msg=lambda m: f"{name}: {m}")


def full_weights(module) -> dict:
    """Every parameter gathered whole (FSDP shards are DTensors), by name."""
    return {n: p.detach().full_tensor().clone() for n, p in module.named_parameters()}
