"""A scripted model server for the recipes' tests: a real HTTP server on 127.0.0.1 answering `POST
/v1/chat/completions` in vLLM's shape (with `return_token_ids`: top-level `prompt_token_ids`, per choice `token_ids`
ending in EOS and one logprob per id; tool calls as OpenAI `tool_calls`), so the gateway records every call as it
records a real vLLM's. What it answers is a Python function of the request body."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EOS_ID = 2


@dataclass
class Answer:
    """One assistant turn: text, or tool calls `(name, arguments)`."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def token_ids(text: str) -> list[int]:
    """Stand-in token ids: one per character (3-499), as a byte-level tokenizer would give."""
    return [3 + ord(ch) % 497 for ch in text]


def chat_response(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    calls = [
        {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for n, a in answer.tool_calls
    ]
    # The raw generation the ids stand for: the text, or Hermes-style tool-call blocks.
    raw = answer.content or "".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>"
                                    for n, a in answer.tool_calls)
    ids = [*token_ids(raw), EOS_ID]
    prompt_ids = token_ids(json.dumps(body.get("messages", [])))
    message: dict[str, Any] = {"role": "assistant", "content": answer.content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    logprobs = {"content": [{"token": f"t{i}", "logprob": -0.5, "bytes": None, "top_logprobs": []} for i in ids]}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "policy"),
        "choices": [{"index": 0, "message": message, "logprobs": logprobs if body.get("logprobs") else None,
                     "finish_reason": "tool_calls" if calls else "stop", "stop_reason": None, "token_ids": ids}],
        "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids),
                  "total_tokens": len(prompt_ids) + len(ids), "prompt_tokens_details": None},
        "prompt_logprobs": None,
        "prompt_token_ids": prompt_ids,
    }


class ScriptedModel:
    """`ScriptedModel(policy)`: `policy(body)` gives each call's `Answer`; `.url` ends in `/v1`; `.calls` counts."""

    def __init__(self, policy: Callable[[dict[str, Any]], Answer]):
        self.calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                model.calls += 1
                if not self.path.endswith("/chat/completions"):
                    return self.reply(404, {"error": {"message": f"no route {self.path}", "type": "NotFound", "code": 404}})
                self.reply(200, chat_response(body, policy(body)))

            def reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def last_user_text(body: dict[str, Any]) -> str:
    return next((m.get("content") or "" for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")


def tool_results(body: dict[str, Any]) -> list[str]:
    """The `tool` messages' contents so far, in order."""
    return [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "tool"]


def main(argv: list[str] | None = None) -> None:
    """`python -m recipes.testing.scripted_model MODULE:FACTORY`: serves `FACTORY()`'s policy on 127.0.0.1 until
    interrupted, its `/v1` URL on the first line of stdout (for `arclight eval --endpoint URL --model scripted`)."""
    import argparse
    import importlib
    import signal

    parser = argparse.ArgumentParser(prog="python -m recipes.testing.scripted_model", description=main.__doc__)
    parser.add_argument("factory", help="MODULE:FACTORY, e.g. recipes.rag.tests.test_rag_eval:scripted_policy")
    args = parser.parse_args(argv)
    module_name, _, attr = args.factory.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as err:
        parser.exit(2, f"{parser.prog}: {args.factory}: {err}\n")
    # The handlers are in place before the URL is printed: a caller may interrupt as soon as it has read it.
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    model = ScriptedModel(factory())
    print(model.url, flush=True)
    while not stop.wait(0.5):
        pass
    model.close()


if __name__ == "__main__":
    main()
