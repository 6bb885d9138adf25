"""The worker's HTTP + JSON server (protocol version 1, routes under /v1; see docs/torch-engine.md). One thread per
connection; the worker serialises use of the weights. Errors: a body that does not match the protocol -> 422 with
FastAPI's `{"detail": [{loc, msg, type}]}`; a `WorkerError` -> its status with `{"detail", "code"}`; malformed JSON
-> 400; an unknown route -> 404; anything else -> 500 `{"detail": "Internal Server Error"}`, logged with its stack."""

import json
import sys
import tempfile
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import schema
from .errors import WorkerError
from .worker import Worker

MAX_BODY_BYTES = 256 * 1024 * 1024


def routes(worker: Worker) -> dict:
    """POST handlers by path: each takes the parsed JSON body and returns the JSON answer."""

    def versioned(answer: dict, adapter: str | None) -> dict:
        return answer | {"policy_version": worker.version(adapter)}

    def tokenizer():
        return worker.policy.tokenizer

    def generate(body) -> dict:
        requests, adapter = schema.parse_generate(body), schema.parse_adapter(body)
        return versioned({"results": worker.generate(requests, adapter)}, adapter)

    def logprobs(body) -> dict:
        rows, adapter = schema.parse_token_rows(body), schema.parse_adapter(body)
        return versioned({"logprobs": worker.logprobs(rows, adapter)}, adapter)

    def train_step(body) -> dict:
        step, adapter = schema.parse_train_step(body), schema.parse_adapter(body)
        return versioned({"metrics": worker.train_step(*step, adapter)}, adapter)

    def save_checkpoint(body) -> dict:
        directory, adapter = schema.parse_dir(body), schema.parse_adapter(body)
        worker.save_checkpoint(directory, adapter)
        return versioned({}, adapter)

    def load_checkpoint(body) -> dict:
        directory, adapter = schema.parse_dir(body), schema.parse_adapter(body)
        worker.load_checkpoint(directory, adapter)
        return versioned({}, adapter)

    def reset_optimizer(body) -> dict:
        adapter = schema.parse_reset(body)
        worker.reset_optimizer(adapter)
        return versioned({}, adapter)

    return {
        "/v1/generate": generate,
        "/v1/logprobs": logprobs,
        "/v1/train_step": train_step,
        "/v1/save_checkpoint": save_checkpoint,
        "/v1/load_checkpoint": load_checkpoint,
        "/v1/reset_optimizer": reset_optimizer,
        "/v1/tokenize": lambda body: _tokenize(tokenizer(), *schema.parse_tokenize(body)),
        "/v1/detokenize": lambda body: _detokenize(tokenizer(), *schema.parse_detokenize(body)),
        "/v1/apply_chat_template": lambda body: _chat(tokenizer(), *schema.parse_chat(body)),
    }


def _tokenize(tokenizer, text: str, add_special_tokens: bool) -> dict:
    return {"token_ids": tokenizer.encode(text, add_special_tokens=add_special_tokens)}


def _detokenize(tokenizer, ids: list[int], skip_special_tokens: bool) -> dict:
    return {"text": tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)}


def _chat(tokenizer, messages: list[dict], tools: list[dict] | None, add_generation_prompt: bool) -> dict:
    text = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    return {"text": text, "token_ids": tokenizer.encode(text, add_special_tokens=False)}


def tokenizer_payload(tokenizer) -> dict:
    """The tokenizer's own files, `{tokenizer, config}` = tokenizer.json and tokenizer_config.json with the chat
    template inlined, so a client can tokenise and render chats locally exactly as the worker does."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        files = Path(tmp)
        config = json.loads((files / "tokenizer_config.json").read_text())
        if (files / "chat_template.jinja").is_file():
            config["chat_template"] = (files / "chat_template.jinja").read_text()
        return {"tokenizer": json.loads((files / "tokenizer.json").read_text()), "config": config}


def make_server(worker: Worker, host: str, port: int) -> ThreadingHTTPServer:
    """Binds the server (port 0 picks a free port); call `serve_forever` to run it."""
    post = routes(worker)
    tokenizer_files = tokenizer_payload(worker.policy.tokenizer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path in ("/v1/info", "/health"):
                self._answer(HTTPStatus.OK, worker.info())
            elif self.path == "/v1/tokenizer":
                self._answer(HTTPStatus.OK, tokenizer_files)
            else:
                self._answer(HTTPStatus.NOT_FOUND, {"detail": f"no route GET {self.path}"})

        def do_POST(self) -> None:  # noqa: N802
            handler = post.get(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"detail": f"body over {MAX_BODY_BYTES} bytes"})
                self.close_connection = True
                return
            raw = self.rfile.read(length)
            if handler is None:
                self._answer(HTTPStatus.NOT_FOUND, {"detail": f"no route POST {self.path}"})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError as error:
                self._answer(HTTPStatus.BAD_REQUEST, {"detail": f"body is not JSON: {error}"})
                return
            self._dispatch(handler, body)

        def _dispatch(self, handler, body) -> None:
            try:
                self._answer(HTTPStatus.OK, handler(body))
            except schema.InvalidRequest as error:
                self._answer(HTTPStatus.UNPROCESSABLE_ENTITY, {"detail": error.errors})
            except WorkerError as error:
                self._answer(error.status, {"detail": str(error), "code": error.code})
            except Exception:  # noqa: BLE001 - the one place that turns unknown errors into a 500
                traceback.print_exc(file=sys.stderr)
                self._answer(HTTPStatus.INTERNAL_SERVER_ERROR, {"detail": "Internal Server Error"})

        def _answer(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet access log
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
