"""A real arclight gateway (memory store, loopback, any free port) started as a child process for the SDK's tests, and
helpers to make a running rollout and read back what the SDK stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KEY = "sdk-test-key"


def gateway_command() -> list[str]:
    """`node dist/cli/main.js gateway` when built (`npm run build`, as `npm ci` does), else the TS source under tsx."""
    built = REPO / "dist" / "cli" / "main.js"
    if built.exists():
        return ["node", str(built)]
    return ["node", "--import", "tsx", str(REPO / "src" / "cli" / "main.ts")]


class Gateway:
    def __init__(self, url: str):
        self.url = url

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("authorization", f"Bearer {KEY}")
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read().decode() or "null")

    def running_rollout(self, is_train: bool = True, input=None) -> str:
        """Creates a rollout and marks it running on attempt 0, as a controller would; returns its id."""
        rid = f"sdk-{uuid.uuid4().hex[:12]}"
        status, _ = self.call("POST", "/api/rollouts", [{"rollout_id": rid, "input": input or {}, "is_train": is_train}])
        assert status == 201
        status, _ = self.call("PATCH", f"/api/rollouts/{rid}", {"status": {"state": "running", "last_attempt_id": "0"}})
        assert status == 200
        return rid

    def agent_environ(self, rid: str, **extra: str) -> dict[str, str]:
        """The `AGL_*` variables of attempt 0 of `rid` (the admin key stands in for the attempt's token)."""
        mode = "train"
        return {
            "AGL_OPENAI_BASE_URL": f"{self.url}/proxy/rollout/{rid}/attempt/0/mode/{mode}/openai/v1",
            "AGL_EVENT_URL": f"{self.url}/api/rollouts/{rid}/attempt/0/events",
            "AGL_KEY": KEY,
            "AGL_ROLLOUT_ID": rid,
            "AGL_ATTEMPT_ID": "0",
            **extra,
        }

    def events(self, rid: str, event_type: str | None = None) -> list[dict]:
        query = f"?event_type={event_type}" if event_type else ""
        status, body = self.call("GET", f"/api/rollouts/{rid}/events{query}")
        assert status == 200, body
        return body  # type: ignore[return-value]


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    env = {**os.environ, "ARCLIGHT_KEY": KEY}
    args = [*gateway_command(), "gateway", "--host", "127.0.0.1", "--port", "0", "--store", "memory"]
    args += ["--dashboard", "false", "--log-level", "warn"]
    process = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if "listening on " not in line:
            process.kill()
            raise RuntimeError(f"gateway did not start: {line}{process.stderr.read() if process.stderr else ''}")
        url = line.split("listening on ", 1)[1].split()[0].rstrip("/")
        yield Gateway(url)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for a child Python that imports this SDK from the source tree."""
    sdk = str(Path(__file__).resolve().parents[1])
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": sdk, "PYTHONDONTWRITEBYTECODE": "1"}


PYTHON = sys.executable
