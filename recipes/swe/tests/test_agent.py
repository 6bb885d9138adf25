"""The harness's tool handling without a model: output truncation and the error texts of malformed tool calls."""

from __future__ import annotations

from arclight_agent.sandbox import open_sandbox
from recipes.swe.agent import SweAgent, truncate


def test_truncate_keeps_head_and_tail():
    text = "a" * 50 + "b" * 50
    assert truncate(text, 200) == text
    cut = truncate(text, 20)
    assert cut.startswith("a" * 10) and cut.endswith("b" * 10) and "[... 80 characters elided ...]" in cut


def test_bad_tool_calls_come_back_as_errors_and_bash_reports_exit_codes(generated, monkeypatch):
    monkeypatch.setenv("SWE_OUTPUT_CHARS", "300")
    agent, task = SweAgent(), generated[1][0]
    with open_sandbox(task) as box:
        assert agent.bash(box, task, "python", '{"code": "1"}').startswith("error: unknown tool 'python'")
        assert agent.bash(box, task, "bash", "{not json").startswith("error: arguments are not JSON")
        assert agent.bash(box, task, "bash", '{"cmd": "ls"}') == 'error: bash takes {"command": "<shell command>"}'
        listed = agent.bash(box, task, "bash", '{"command": "ls; echo oops >&2; exit 3"}')
        assert listed.startswith("exit code 3\n") and "pytest.ini" in listed and listed.endswith("[stderr]\noops\n")
        long = agent.bash(box, task, "bash", '{"command": "seq 1 5000"}')
        assert len(long) < 400 and "characters elided" in long and long.rstrip().endswith("5000")
