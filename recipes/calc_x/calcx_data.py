"""Calc-X problems: a loader for the public Calc-X JSONL layout and the numeric answers in it.

Calc-X (MU-NLPC/Calc-X: calc-gsm8k, calc-ape210k, calc-math_qa, calc-aqua_rat, ...) rows, as its JSONL/parquet
exports hold them; what this loader reads:
- `question` (required): the word problem;
- `result` (required): the answer as text: an integer (`18`), a decimal (`2.5`), a fraction (`3/4`), thousands
  separators (`1,000`) or a percentage (`25%`); a row whose `result` is none of these is skipped, with its id in the
  returned `skipped` list (e.g. the letter options of calc-aqua_rat, which need the option text);
- `result_float` (optional): the answer as a number, preferred when present (calc-ape210k has it);
- `id` (optional, else `line-N`), `chain` (optional: the reference solution in Calc-X's
  `<gadget id="calculator">…</gadget><output>…</output>` markup; not read), `source_ds` (optional, kept).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$")


@dataclass(frozen=True)
class Problem:
    id: str
    question: str
    answer: float
    source: str = ""


def parse_number(text: str) -> float | None:
    """A numeric answer written as text: `18`, `-2.5`, `1,000`, `3/4`, `1 1/2`, `25%`, `$12`; None when it is none."""
    t = str(text).strip().replace("$", "").replace(" ", " ").strip()
    if not t:
        return None
    percent = t.endswith("%")
    t = t.rstrip("%").strip()
    mixed = re.fullmatch(r"([-+]?\d+)\s+(\d+)/(\d+)", t)
    if mixed:
        whole, num, den = int(mixed[1]), int(mixed[2]), int(mixed[3])
        value = None if den == 0 else float(whole + (Fraction(num, den) if whole >= 0 else -Fraction(num, den)))
    elif re.fullmatch(r"[-+]?\d+(\.\d+)?\s*/\s*\d+(\.\d+)?", t):
        num, den = (float(part) for part in t.split("/"))
        value = None if den == 0 else num / den
    elif NUMBER.fullmatch(t) and any(ch.isdigit() for ch in t):
        value = float(t.replace(",", ""))
    else:
        return None
    return None if value is None else (value / 100 if percent else value)


def problem_from_row(row: dict[str, Any], line: int = 0) -> Problem | None:
    """One Calc-X row as a `Problem`, or None when its answer is not a number.

    :raises ValueError: a row that is not an object or lacks `question` or `result`
    """
    if not isinstance(row, dict) or not isinstance(row.get("question"), str) or "result" not in row:
        raise ValueError("a Calc-X row needs a question (text) and a result")
    answer = row.get("result_float")
    if not isinstance(answer, (int, float)) or isinstance(answer, bool):
        answer = parse_number(str(row["result"]))
    if answer is None:
        return None
    return Problem(str(row.get("id") or f"line-{line}"), row["question"], float(answer), str(row.get("source_ds") or ""))


def load_calcx(path: str | Path, limit: int | None = None) -> tuple[list[Problem], list[str]]:
    """Reads a Calc-X JSONL file.

    :returns: the problems, and the ids of rows skipped because their answer is not a number
    :raises ValueError: naming the file and line of a row that is not a JSON object or lacks `question`/`result`
    """
    problems: list[Problem] = []
    skipped: list[str] = []
    with open(path, encoding="utf-8") as file:
        for line, text in enumerate(file, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{line}: not JSON ({err.msg})") from None
            try:
                problem = problem_from_row(row, line)
            except ValueError as err:
                raise ValueError(f"{path}:{line}: {err}") from None
            if problem is None:
                skipped.append(str(row.get("id") or f"line-{line}"))
            else:
                problems.append(problem)
            if limit is not None and len(problems) >= limit:
                break
    return problems, skipped


def to_rollout_inputs(problems: list[Problem]) -> list[dict[str, Any]]:
    """Trainer data rows (`data.train_path`): Calc-X's own field names, so the agent reads either file the same way."""
    return [
        {"id": p.id, "data_id": p.id, "question": p.question, "result": repr(p.answer), "result_float": p.answer,
         "source_ds": p.source}
        for p in problems
    ]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Convert a Calc-X JSONL file into arclight trainer data.")
    parser.add_argument("source", help="Calc-X JSONL (e.g. an export of calc-gsm8k's train split)")
    parser.add_argument("out", help="JSONL to write: one rollout input per numeric problem")
    parser.add_argument("--limit", type=int, default=None, help="most problems to keep")
    args = parser.parse_args()
    try:
        problems, skipped = load_calcx(args.source, args.limit)
        with open(args.out, "w", encoding="utf-8") as out:
            for row in to_rollout_inputs(problems):
                out.write(json.dumps(row) + "\n")
    except (OSError, ValueError) as err:  # a missing file or a bad row: its message names it, no traceback
        parser.exit(2, f"{parser.prog}: {err}\n")
    print(f"wrote {len(problems)} problems to {args.out}; skipped {len(skipped)} without a numeric answer")
