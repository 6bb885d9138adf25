"""emit_event / emit_reward against a real gateway: stored once across retries, 4xx final, outside a rollout refused."""

from __future__ import annotations

import http.server
import threading
import urllib.request

import pytest

from arclight_agent import EmitFailed, NotInRollout, emit_event, emit_reward, from_env


class FlakyFront:
    """A loopback HTTP server in front of the gateway that plays one trouble per POST from `script`, then forwards:
    `drop` forwards the post and closes the connection without an answer (the answer is lost), `429` answers
    429 with `Retry-After: 0` without forwarding, `503` answers 503."""

    def __init__(self, target: str, script: list[str]):
        self.target = target
        self.script = list(script)
        self.posts = 0
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                front.posts += 1
                trouble = front.script.pop(0) if front.script else "forward"
                if trouble in ("429", "503"):
                    self.send_response(int(trouble))
                    self.send_header("retry-after", "0")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                request = urllib.request.Request(front.target + self.path, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(request) as response:
                    answer, status = response.read(), response.status
                if trouble == "drop":
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_reward_and_event_are_stored_with_their_fields(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid))
    emit_event("progress", {"step": 1}, env=env)
    stored = emit_reward(0.75, source="judge", reason="3 of 4 checks passed", env=env)
    assert stored["event_type"] == "reward" and stored["rollout_id"] == rid and stored["attempt_id"] == "0"
    events = gateway.events(rid)
    assert [e["event_type"] for e in events] == ["progress", "reward"]
    assert events[1]["data"] == {"value": 0.75, "source": "judge", "reason": "3 of 4 checks passed"}


def test_a_post_whose_answer_was_lost_is_retried_and_stored_once(gateway):
    # The first post reaches the gateway but its answer never comes back; then a 429 and a 503: the SDK retries
    # the same event_id each time, so the gateway keeps exactly one event.
    rid = gateway.running_rollout()
    front = FlakyFront(gateway.url, ["drop", "429", "503"])
    try:
        environ = gateway.agent_environ(rid)
        environ["AGL_EVENT_URL"] = environ["AGL_EVENT_URL"].replace(gateway.url, front.url)
        emit_reward(1.0, env=from_env(environ))
    finally:
        front.close()
    assert front.posts == 4
    rewards = gateway.events(rid, "reward")
    assert [e["data"]["value"] for e in rewards] == [1.0]


def test_a_4xx_answer_is_final(gateway):
    environ = gateway.agent_environ("no-such-rollout")
    with pytest.raises(EmitFailed) as raised:
        emit_reward(1.0, env=from_env(environ), retries=3)
    assert raised.value.status == 404
    assert "no-such-rollout" in str(raised.value)


def test_transport_errors_run_out_of_retries(gateway):
    environ = gateway.agent_environ("r")
    environ["AGL_EVENT_URL"] = "http://127.0.0.1:9/api/rollouts/r/attempt/0/events"
    with pytest.raises(EmitFailed) as raised:
        emit_event("log", {}, env=from_env(environ), retries=1)
    assert raised.value.status is None


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "1", True])
def test_a_reward_must_be_a_finite_number(gateway, value):
    rid = gateway.running_rollout()
    with pytest.raises(ValueError, match="finite number"):
        emit_reward(value, env=from_env(gateway.agent_environ(rid)))
    assert gateway.events(rid) == []


def test_outside_a_rollout_every_missing_variable_is_named():
    with pytest.raises(NotInRollout) as raised:
        from_env({"AGL_KEY": "k", "AGL_ROLLOUT_ID": "r"})
    assert raised.value.missing == ["AGL_OPENAI_BASE_URL", "AGL_EVENT_URL", "AGL_ATTEMPT_ID"]
    assert "AGL_EVENT_URL" in str(raised.value)
