"""The graded numeric reward of calc-x: the model's final `ANSWER: <number>` against the gold answer.

| Reward | When |
|---|---|
| 1.0 | the answer equals the gold one (relative error at most 1e-4, absolute 1e-6 near zero) |
| 0.5 | within 1 % of it (a rounding slip) |
| 0.1 | an `ANSWER:` line with a number, but wrong (the format is right) |
| 0.0 | no `ANSWER:` line with a number |
"""

from __future__ import annotations

import re

from .calcx_data import parse_number

ANSWER_LINE = re.compile(r"ANSWER\s*:\s*(.+)", re.IGNORECASE)


def extract_answer(text: str) -> float | None:
    """The number on the last `ANSWER:` line of `text` (trailing words and a period allowed), or None."""
    matches = ANSWER_LINE.findall(text or "")
    if not matches:
        return None
    candidate = matches[-1].strip().rstrip(".").strip()
    value = parse_number(candidate)
    if value is None:
        first = re.match(r"[-+$]?[\d,]*\.?\d+(\s*/\s*\d+)?%?", candidate)
        value = parse_number(first[0]) if first else None
    return value


def graded_reward(predicted: float | None, gold: float) -> float:
    """The table above, for a parsed answer (None: none given)."""
    if predicted is None:
        return 0.0
    error = abs(predicted - gold)
    scale = max(abs(gold), 1e-12)
    if error <= 1e-6 or error / scale <= 1e-4:
        return 1.0
    if error / scale <= 0.01:
        return 0.5
    return 0.1
