"""Test helpers for agent code: a real arclight gateway and controller started as child processes on 127.0.0.1 (any
free port, memory store), so an agent's tests exercise the stack it will run in. They run the arclight CLI given by
`ARCLIGHT_CLI` (a command line, e.g. `node /path/to/arclight/dist/cli/main.js`), else `npx arclight`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any


def cli_command() -> list[str]:
    """The arclight CLI as an argv prefix: `ARCLIGHT_CLI`, else `npx arclight`."""
    return shlex.split(os.environ.get("ARCLIGHT_CLI") or "npx arclight")


def _start(args: list[str], cwd: str | None, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Starts a CLI child (stderr to a temp file, so a chatty child never blocks on a full pipe); returns its first line."""
    stderr = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    process.stderr_file = stderr  # type: ignore[attr-defined]
    line = process.stdout.readline() if process.stdout else ""
    # Keep reading its stdout (pino logs go there), so a full pipe never stops it.
    threading.Thread(target=_drain, args=(process.stdout,), daemon=True).start()
    return process, line


def _drain(stream: Any) -> None:
    for _ in stream or ():
        pass


def _stop_and_read(process: subprocess.Popen) -> str:
    process.kill()
    process.wait()
    stderr = process.stderr_file  # type: ignore[attr-defined]
    stderr.seek(0)
    return stderr.read()


class Gateway:
    """A running gateway child process and an admin client of its HTTP API."""

    def __init__(self, process: subprocess.Popen, url: str, key: str):
        self.process = process
        self.url = url
        self.key = key

    @classmethod
    def start(cls, key: str = "test-key", extra_args: list[str] | None = None, cwd: str | None = None) -> Gateway:
        """Starts `arclight gateway --store memory` on 127.0.0.1, port 0, and waits for its listening line.

        :raises RuntimeError: when it exits or prints something else first (its stderr is in the message)
        """
        args = [*cli_command(), "gateway", "--host", "127.0.0.1", "--port", "0", "--store", "memory"]
        args += ["--dashboard", "false", "--log-level", "warn", *(extra_args or [])]
        env = {**os.environ, "ARCLIGHT_KEY": key}
        process, line = _start(args, cwd, env)
        if "listening on " not in line:
            raise RuntimeError(f"gateway did not start: {line}{_stop_and_read(process)}")
        return cls(process, line.split("listening on ", 1)[1].split()[0].rstrip("/"), key)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One admin call: (status, parsed JSON body or None)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as err:
            text = err.read().decode()
            return err.code, json.loads(text) if text else None

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        """`call` that raises on a non-2xx answer."""
        status, answer = self.call(method, path, body)
        if status >= 300:
            raise RuntimeError(f"{method} {path} answered {status}: {answer}")
        return answer

    def running_rollout(self, input: Any = None, is_train: bool = True) -> str:
        """Creates a rollout and marks it running on attempt 0, as a controller would; returns its id."""
        rid = f"t-{uuid.uuid4().hex[:12]}"
        self.ok("POST", "/api/rollouts", [{"rollout_id": rid, "input": {} if input is None else input, "is_train": is_train}])
        self.ok("PATCH", f"/api/rollouts/{rid}", {"status": {"state": "running", "last_attempt_id": "0"}})
        return rid

    def agent_environ(self, rid: str, **extra: str) -> dict[str, str]:
        """The `AGL_*` variables of attempt 0 of a train rollout `rid` (the admin key stands in for the token)."""
        return {
            "AGL_OPENAI_BASE_URL": f"{self.url}/proxy/rollout/{rid}/attempt/0/mode/train/openai/v1",
            "AGL_EVENT_URL": f"{self.url}/api/rollouts/{rid}/attempt/0/events",
            "AGL_KEY": self.key,
            "AGL_ROLLOUT_ID": rid,
            "AGL_ATTEMPT_ID": "0",
            **extra,
        }

    def events(self, rid: str, event_type: str | None = None, triplet: bool = False) -> list[dict]:
        query = [f"event_type={event_type}"] if event_type else []
        query += ["format=triplet"] if triplet else []
        return self.ok("GET", f"/api/rollouts/{rid}/events" + ("?" + "&".join(query) if query else ""))

    def wait_terminal(self, ids: list[str], timeout_s: float = 120) -> list[dict]:
        """Polls until every rollout is `succeeded` or `failed`; returns them in order.

        :raises TimeoutError: naming the rollouts still open
        """
        deadline = time.monotonic() + timeout_s
        while True:
            rollouts = [self.ok("GET", f"/api/rollouts/{rid}")["rollout"] for rid in ids]
            open_ids = [r["rollout_id"] for r in rollouts if r["status"]["state"] not in ("succeeded", "failed")]
            if not open_ids:
                return rollouts
            if time.monotonic() > deadline:
                raise TimeoutError(f"rollouts still open after {timeout_s} s: {open_ids}")
            time.sleep(0.2)


class Controller:
    """A running `arclight controller` child process (local mode) on a `Gateway`."""

    def __init__(self, process: subprocess.Popen):
        self.process = process

    @classmethod
    def start(
        cls, gateway: Gateway, state_dir: str, cwd: str | None = None, env: dict[str, str] | None = None, **keys: Any
    ) -> Controller:
        """Starts the controller with the gateway's URL and key and waits for its start line; `keys` are controller
        config keys (strings as given, anything else as JSON).

        :param state_dir: folder of its state file
        :param env: the controller's environment (its agents inherit it); default this process's
        :raises RuntimeError: when it exits first (its stderr is in the message)
        """
        args = [*cli_command(), "controller", "--gateway-url", gateway.url, "--log-level", "warn"]
        args += ["--poll-interval-seconds", "0.1", "--state-file", os.path.join(state_dir, "controller-state.json")]
        for key, value in keys.items():
            args += [f"--{key.replace('_', '-')}", value if isinstance(value, str) else json.dumps(value)]
        environ = {**(os.environ if env is None else env), "ARCLIGHT_KEY": gateway.key}
        process, line = _start(args, cwd, environ)
        if not line.startswith("arclight controller:"):
            raise RuntimeError(f"controller did not start: {line}{_stop_and_read(process)}")
        return cls(process)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
