"""`arclight eval` on the calc-x recipe against a scripted OpenAI-compatible server on loopback: each task's n
rollouts get a known number of right answers (the first c final answers of a task are right, the rest wrong), so
pass@k, the mean reward and the completion share of the printed table and the JSON/CSV files are known exactly."""

from __future__ import annotations

import csv
import json
import re
import sys
import threading
from pathlib import Path

from recipes.calc_x.generate_problems import HERE
from recipes.testing.eval_cli import pass_at_k, run_eval
from recipes.testing.scripted_model import Answer, ScriptedModel, last_user_text, tool_results

N = 4
ROWS = [json.loads(line) for line in open(HERE / "data" / "val.jsonl")][:4]
RIGHT = {row["question"]: c for row, c in zip(ROWS, [4, 2, 1, 0])}  # right answers per task, of N
STEPS = {row["question"]: re.findall(r'<gadget id="calculator">(.*?)</gadget>', row["chain"]) for row in ROWS}


def scripted_policy():
    """A calculator user whose first RIGHT[q] final answers to question q are right, the others off by far."""
    finals: dict[str, int] = {}
    lock = threading.Lock()

    def answer(body):
        question = last_user_text(body)
        steps, done = STEPS[question], tool_results(body)
        if len(done) < len(steps):
            return Answer(tool_calls=[("calculate", {"expression": steps[len(done)]})])
        with lock:
            finals[question] = finals.get(question, 0) + 1
            right = finals[question] <= RIGHT[question]
        value = float(done[-1]) if right else float(done[-1]) * 2 + 1
        return Answer(content=f"ANSWER: {value:g}")

    return answer


def test_eval_reports_known_pass_at_k_against_an_endpoint(tmp_path: Path):
    model = ScriptedModel(scripted_policy())
    out_json, out_csv = tmp_path / "eval.json", tmp_path / "eval.csv"
    common = ["recipes/calc_x/train.cpu.yaml", "--split", "val", "--limit", "4", "--samples", str(N), "--k", "1,2,4",
              "--endpoint", model.url, "--model", "scripted", "--pool-size", "4",
              "--set", f"controller.python={sys.executable}"]
    try:
        result = run_eval([*common, "--out", str(out_json)])
    finally:
        model.close()
    assert result.returncode == 0, result.stderr
    assert model.calls == sum(N * (len(STEPS[q]) + 1) for q in STEPS)  # every rollout ran its whole tool loop
    summary = json.loads(out_json.read_text())
    expected = {k: sum(pass_at_k(N, c, k) for c in RIGHT.values()) / len(RIGHT) for k in (1, 2, 4)}
    assert [e["k"] for e in summary["passAtK"]] == [1, 2, 4]
    for entry in summary["passAtK"]:
        assert abs(entry["value"] - expected[entry["k"]]) < 1e-12
    # Right answers score 1.0, wrong ones 0.1 (format only): 7 right and 9 wrong of 16.
    assert abs(summary["meanReward"] - (7 * 1.0 + 9 * 0.1) / 16) < 1e-9
    assert summary["completedShare"] == 1.0 and summary["rewardedShare"] == 1.0
    assert sorted(t["passed"] for t in summary["perTask"]) == [0, 1, 2, 4]
    # The terminal table carries the same figures.
    assert re.search(rf"pass@2 \(reward >= 1\)\s+{expected[2]:.4f}", result.stdout), result.stdout
    assert re.search(r"mean reward\s+0\.493[78]", result.stdout) and re.search(r"completed\s+100\.0%", result.stdout)


def test_eval_writes_csv_and_names_bad_flags(tmp_path: Path):
    bad = run_eval(["recipes/calc_x/train.cpu.yaml", "--samples", "2", "--k", "3"])
    assert bad.returncode != 0 and "--k 3: pass@3 needs at least 3 samples per task (--samples is 2)" in bad.stderr
    bad = run_eval(["recipes/calc_x/train.cpu.yaml", "--model", "m"])
    assert bad.returncode != 0 and "--model: only with --endpoint URL" in bad.stderr
    bad = run_eval(["recipes/calc_x/train.cpu.yaml", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m",
                    "--api-key-env", "ARCLIGHT_TEST_UNSET_KEY"])
    assert bad.returncode != 0 and "--api-key-env ARCLIGHT_TEST_UNSET_KEY: that environment variable is not set" in bad.stderr
    bad = run_eval(["recipes/calc_x/train.cpu.yaml", "--out", "eval.txt"])
    assert bad.returncode != 0 and "--out eval.txt: expected a .json or .csv file name" in bad.stderr
    model = ScriptedModel(scripted_policy())
    out_csv = tmp_path / "eval.csv"
    try:
        result = run_eval(["recipes/calc_x/train.cpu.yaml", "--limit", "2", "--endpoint", model.url, "--model", "s",
                           "--set", f"controller.python={sys.executable}", "--out", str(out_csv)])
    finally:
        model.close()
    assert result.returncode == 0, result.stderr
    text = out_csv.read_text()
    tasks = list(csv.DictReader(text.split("\n\n")[0].splitlines()))
    assert [(t["data_index"], t["samples"], t["passed"]) for t in tasks] == [("0", "1", "1"), ("1", "1", "1")]
    metrics = dict(row.split(",") for row in text.split("\n\n")[1].splitlines()[1:])
    assert float(metrics["pass@1"]) == 1.0 and float(metrics["completed_share"]) == 1.0


def test_eval_with_a_pointwise_judge_replacing_the_reward(tmp_path: Path):
    """The `judge` config section through the real stack: both answers are right (agent reward 1.0); a scripted judge
    scores the first 8/10 and gives the second an unparsable verdict, so it keeps the agent's reward."""
    model = ScriptedModel(scripted_policy())
    seen: list[str] = []

    def judge_policy(body):
        prompt = body["messages"][-1]["content"]
        seen.append(prompt)
        return Answer(content="Correct.\nSCORE: 8" if "ANSWER: 440" in prompt else "Hard to say.\nSCORE: unsure")

    judge = ScriptedModel(judge_policy)
    out = tmp_path / "judged.json"
    try:
        result = run_eval(["recipes/calc_x/train.cpu.yaml", "--limit", "2", "--threshold", "0.9", "--out", str(out),
                           "--endpoint", model.url, "--model", "s", "--set", f"controller.python={sys.executable}",
                           "--set", "judge.enabled=true", "--set", f"judge.base_url={judge.url}",
                           "--set", "judge.model=j", "--set", "judge.combine=replace"])
    finally:
        model.close()
        judge.close()
    assert result.returncode == 0, result.stderr
    # One request for the right answer, three (max_attempts) for the unparsable one.
    assert len(seen) == 4 and all("<task>\n" in p and "SCORE: <number>" in p for p in seen)
    summary = json.loads(out.read_text())
    rewards = sorted(t["meanReward"] for t in summary["perTask"])
    assert rewards == [0.8, 1.0]  # judged: 8/10 replaces 1.0; unjudged keeps its own 1.0
    assert summary["passAtK"][0]["value"] == 0.5  # 0.8 is below --threshold 0.9
    assert "judge: pointwise j: 1 rollouts judged, 1 without a verdict" in result.stdout
