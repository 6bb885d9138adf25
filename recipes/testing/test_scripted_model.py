"""The scripted model server as a command: `python -m recipes.testing.scripted_model MODULE:FACTORY` answers a real
HTTP chat completion with the factory's policy, so `arclight eval --endpoint` can be pointed at it by hand."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

from recipes.conftest import REPO
from recipes.rag.tests.test_rag_eval import HOPS

COMMAND = [sys.executable, "-m", "recipes.testing.scripted_model"]


def test_command_serves_a_test_policy_and_prints_its_url():
    server = subprocess.Popen([*COMMAND, "recipes.rag.tests.test_rag_eval:scripted_policy"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), server.stderr.read()
        question, hops = next(iter(HOPS.items()))
        body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": question}]}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", body, {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.load(response)
        call = reply["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "search" and json.loads(call["arguments"]) == {"query": hops[0]["question"]}
    finally:
        server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            code = server.wait()
        assert code == 0, server.stderr.read()


def test_command_names_a_factory_it_cannot_import():
    result = subprocess.run([*COMMAND, "recipes.rag.tests.test_rag_eval:no_such_policy"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no_such_policy" in result.stderr and "Traceback" not in result.stderr
