"""`arclight eval` on the rag recipe against a scripted OpenAI-compatible server on loopback: the policy searches each
hop over the recipe's BM25 index, and of each task's n final answers the first c are the gold answer and the rest
`unknown` (format only, reward 0.1), so pass@k, the mean reward and the printed summary table are known exactly."""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path

from recipes.rag.generate_data import HERE
from recipes.testing.eval_cli import pass_at_k, run_eval
from recipes.testing.scripted_model import Answer, ScriptedModel, last_user_text, tool_results

N = 3
ROWS = [json.loads(line) for line in open(HERE / "data" / "val.jsonl")][:3]
RIGHT = {row["question"]: c for row, c in zip(ROWS, [3, 1, 0])}  # gold answers per task, of N
HOPS = {row["question"]: row["question_decomposition"] for row in ROWS}


def scripted_policy():
    """Searches every hop's sub-question (earlier hops' answers filled in), then answers: gold RIGHT[q] times."""
    finals: dict[str, int] = {}
    lock = threading.Lock()

    def answer(body):
        question = last_user_text(body)
        hops, results = HOPS[question], tool_results(body)
        if len(results) < len(hops):
            query = hops[len(results)]["question"]
            for k, hop in enumerate(hops[: len(results)], 1):
                query = query.replace(f"#{k}", hop["answer"])
            return Answer(tool_calls=[("search", {"query": query})])
        with lock:
            finals[question] = finals.get(question, 0) + 1
            right = finals[question] <= RIGHT[question]
        return Answer(content=f"<answer>{hops[-1]['answer'] if right else 'unknown'}</answer>")

    return answer


def test_rag_eval_reports_known_pass_at_k_and_mean_reward(tmp_path: Path):
    model = ScriptedModel(scripted_policy())
    out = tmp_path / "rag-eval.json"
    try:
        result = run_eval(["recipes/rag/train.cpu.yaml", "--limit", "3", "--samples", str(N), "--k", "1,2,3",
                           "--endpoint", model.url, "--model", "scripted", "--pool-size", "3", "--out", str(out),
                           "--set", f"controller.python={sys.executable}"])
    finally:
        model.close()
    assert result.returncode == 0, result.stderr
    assert model.calls == sum(N * (len(hops) + 1) for hops in HOPS.values())  # every rollout searched every hop
    summary = json.loads(out.read_text())
    expected = {k: sum(pass_at_k(N, c, k) for c in RIGHT.values()) / len(RIGHT) for k in (1, 2, 3)}
    assert [(e["k"], round(e["value"], 12)) for e in summary["passAtK"]] == [(k, round(v, 12)) for k, v in expected.items()]
    # Gold answers score 1.0 (format 0.1 + F1 0.9), `unknown` 0.1: 4 gold and 5 unknown of 9.
    assert abs(summary["meanReward"] - (4 * 1.0 + 5 * 0.1) / 9) < 1e-9
    assert summary["completedShare"] == 1.0 and summary["rewardedShare"] == 1.0
    assert [t["passed"] for t in summary["perTask"]] == [3, 1, 0]
    table = result.stdout
    assert re.search(r"^tasks\s+3$", table, re.M) and re.search(r"^samples per task\s+3$", table, re.M), table
    for k in (1, 2, 3):
        assert re.search(rf"^pass@{k} \(reward >= 1\)\s+{expected[k]:.4f}$", table, re.M), table
    assert re.search(r"^mean reward\s+0\.5000$", table, re.M) and re.search(r"^completed\s+100\.0%$", table, re.M)
