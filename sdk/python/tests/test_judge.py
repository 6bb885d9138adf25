"""arclight_agent.judge against a scripted judge server on 127.0.0.1: prompt, parsing, retries and failures."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from arclight_agent.judge import judge_answer, parse_score, pointwise_messages


class ScriptedJudge:
    """Answers each POST with the next script entry (the last repeats): ("content", text), ("status", code),
    ("raw", body), ("refusal", text) or ("stall", seconds)."""

    def __init__(self, scripts):
        self.requests = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                kind, value = scripts[min(len(judge.requests), len(scripts) - 1)]
                judge.requests.append({"body": body, "authorization": self.headers.get("authorization")})
                if kind == "stall":
                    time.sleep(value)
                    kind, value = "content", "SCORE: 5"
                if kind == "status":
                    return self.send(value, b'{"error": {"message": "boom"}}')
                if kind == "raw":
                    return self.send(200, value.encode())
                message = {"role": "assistant", "content": value} if kind == "content" else \
                    {"role": "assistant", "content": None, "refusal": value}
                self.send(200, json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode())

            def send(self, status, data):
                try:
                    self.reply(status, data)
                except BrokenPipeError:  # the client timed out on a stalled answer
                    pass

            def reply(self, status, data):
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    started = []

    def start(*scripts):
        judge = ScriptedJudge(list(scripts))
        started.append(judge)
        return judge

    yield start
    for judge in started:
        judge.close()


def test_prompt_holds_rubric_task_answer_and_range():
    system, user = pointwise_messages("Be exact.", "What is 2+2?", "4", 1, 5)
    assert system["role"] == "system"
    assert "Rubric:\nBe exact." in user["content"] and "<task>\nWhat is 2+2?\n</task>" in user["content"]
    assert user["content"].endswith("from 1 (worst) to 5 (best) on the last line, exactly as: SCORE: <number>")


def test_parse_score_good_malformed_out_of_range_refusal():
    assert parse_score("ok\n**Score:** 7/10", 0, 10) == (7.0, "")
    assert parse_score("SCORE: seven", 0, 10) == (None, 'SCORE: "seven" is not a number')
    assert parse_score("SCORE: 11", 0, 10) == (None, "score 11 outside 0..10")
    assert parse_score("I can't grade this.", 0, 10) == (None, "no SCORE: line in the reply")


def test_scores_with_key_and_retries_through_failures(scripted):
    judge = scripted(("content", "SCORE: nope"), ("status", 503), ("raw", "<html>"), ("content", "Right.\nSCORE: 8"))
    verdict = judge_answer("t", "a", base_url=judge.url, model="j", api_key="sk-j", max_attempts=4)
    assert (verdict.reward, verdict.attempts) == (0.8, 4)
    assert judge.requests[0]["authorization"] == "Bearer sk-j" and judge.requests[0]["body"]["model"] == "j"


def test_no_reward_with_the_problem_when_every_attempt_fails(scripted):
    failing = scripted(("status", 500))
    verdict = judge_answer("t", "a", base_url=failing.url, model="j", max_attempts=2)
    assert (verdict.reward, verdict.problem, verdict.attempts) == (None, "judge endpoint answered 500", 2)
    refusing = scripted(("refusal", "No."))
    assert judge_answer("t", "a", base_url=refusing.url, model="j", max_attempts=1).problem == "judge refused (No.)"
    stalling = scripted(("stall", 1.0))
    verdict = judge_answer("t", "a", base_url=stalling.url, model="j", max_attempts=1, timeout_s=0.2)
    assert (verdict.reward, verdict.problem) == (None, "judge request timed out")
