"""The Calc-X loader, the calculator and the graded reward, on hand-written rows in the public Calc-X layout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from recipes.conftest import REPO

from recipes.calc_x.calculator import CalculatorError, evaluate
from recipes.calc_x.calcx_data import load_calcx, parse_number, problem_from_row, to_rollout_inputs
from recipes.calc_x.reward import extract_answer, graded_reward

# Rows shaped as Calc-X's exports: calc-gsm8k (result text), calc-ape210k (result_float, fractions), calc-aqua_rat
# (a letter option: no numeric answer).
ROWS = [
    {"id": "gsm8k__a1", "question": "Natalia sold clips to 48 friends...", "chain":
     '<gadget id="calculator">48/2</gadget><output>24</output> Final result is <result>72</result>',
     "result": "72", "result_float": 72.0, "source_ds": "gsm8k"},
    {"id": "ape210k__b2", "question": "A rope is 3/4 m ...", "chain": "", "result": "3/4", "source_ds": "ape210k"},
    {"id": "ape210k__c3", "question": "...", "chain": "", "result": "1,250", "source_ds": "ape210k"},
    {"id": "aqua_rat__d4", "question": "...", "chain": "", "result": "C", "source_ds": "aqua_rat"},
]


def test_loader_reads_the_calcx_layout_and_skips_non_numeric_answers(tmp_path):
    path = tmp_path / "calc-x.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n\n")
    problems, skipped = load_calcx(path)
    assert [(p.id, p.answer, p.source) for p in problems] == [
        ("gsm8k__a1", 72.0, "gsm8k"), ("ape210k__b2", 0.75, "ape210k"), ("ape210k__c3", 1250.0, "ape210k")]
    assert skipped == ["aqua_rat__d4"]
    assert load_calcx(path, limit=2)[0][-1].id == "ape210k__b2"


def test_loader_names_the_line_of_a_bad_row(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:2: not JSON"):
        load_calcx(path)
    for row in [{"question": "no result"}, [1, 2]]:
        path.write_text(json.dumps(row) + "\n")
        with pytest.raises(ValueError, match="bad.jsonl:1: a Calc-X row needs a question"):
            load_calcx(path)


def test_converter_command_names_a_missing_or_bad_file_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    for source, named in [(tmp_path / "absent.jsonl", "absent.jsonl"), (bad, "bad.jsonl:2: not JSON")]:
        command = [sys.executable, "-m", "recipes.calc_x.calcx_data", str(source), str(tmp_path / "out.jsonl")]
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and named in result.stderr and "Traceback" not in result.stderr, result.stderr

def test_rollout_inputs_keep_calcx_fields_so_the_agent_reads_them_back():
    problems = [problem_from_row(r, i) for i, r in enumerate(ROWS[:2], 1)]
    for row, problem in zip(to_rollout_inputs(problems), problems):
        assert problem_from_row(row) == problem and row["data_id"] == problem.id


@pytest.mark.parametrize(("text", "value"), [
    ("18", 18.0), ("-2.5", -2.5), ("1,000", 1000.0), ("3/4", 0.75), ("1 1/2", 1.5), ("25%", 0.25), ("$12.50", 12.5),
    ("C", None), ("", None), ("1/0", None), ("12 apples", None)])
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_calculator_is_exact_and_refuses_what_is_not_arithmetic():
    assert evaluate("(12 + 30) * 2 / 7") == "12"
    assert evaluate("200-163.75") == "36.25"
    assert evaluate("10/3") == "3.333333"
    assert evaluate("2^10") == "1024"
    for bad, why in [("1/0", "division by zero"), ("__import__('os')", "unsupported syntax"), ("2**1000", "exponents"),
                     ("", "1 to 500"), ("3 +", "not an arithmetic expression")]:
        with pytest.raises(CalculatorError, match=why):
            evaluate(bad)


@pytest.mark.parametrize(("reply", "answer"), [
    ("Step 1...\nANSWER: 36.25", 36.25), ("answer: 1,250.", 1250.0), ("ANSWER: 14 stickers", 14.0),
    ("ANSWER: 3\nwait\nANSWER: 4", 4.0), ("The result is 14", None), ("ANSWER: none", None), ("", None)])
def test_extract_answer_reads_the_last_answer_line(reply, answer):
    assert extract_answer(reply) == answer


@pytest.mark.parametrize(("predicted", "gold", "reward"), [
    (14.0, 14.0, 1.0), (36.2500001, 36.25, 1.0), (0.0, 0.0, 1.0), (100.5, 100.0, 0.5), (14.0, 15.0, 0.1),
    (-14.0, 14.0, 0.1), (None, 14.0, 0.0)])
def test_graded_reward(predicted, gold, reward):
    assert graded_reward(predicted, gold) == reward


def test_shipped_problems_are_in_the_calcx_layout_and_their_chains_compute_their_results():
    import re

    from recipes.calc_x.generate_problems import HERE

    for split, count in [("train", 300), ("val", 60)]:
        problems, skipped = load_calcx(HERE / "data" / f"{split}.jsonl")
        assert len(problems) == count and skipped == []
        rows = [json.loads(line) for line in open(HERE / "data" / f"{split}.jsonl")]
        for row in rows:
            steps = re.findall(r'<gadget id="calculator">(.*?)</gadget><output>(.*?)</output>', row["chain"])
            assert len(steps) == row["level"]
            assert all(evaluate(expr) == out for expr, out in steps)
            assert graded_reward(parse_number(steps[-1][1]), row["result_float"]) == 1.0
