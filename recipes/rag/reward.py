"""The rag reward: a weighted format score plus the answer's token F1 against the best gold answer (SQuAD's
normalisation: lowercase, no punctuation, no articles, single spaces); exact match is reported beside it.

reward = FORMAT_WEIGHT * format + (1 - FORMAT_WEIGHT) * F1, with format 1 when the reply holds exactly one
`<answer>…</answer>` with some text inside, else 0 (and F1 is then taken over the whole reply, so a bare answer
still earns most of it).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

FORMAT_WEIGHT = 0.1
ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def normalize(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(predicted: str, gold: str) -> float:
    p, g = normalize(predicted).split(), normalize(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def extract_answer(reply: str) -> tuple[str, bool]:
    """The answer text and whether the reply had the format (exactly one non-empty `<answer>` tag)."""
    tags = ANSWER_TAG.findall(reply or "")
    if len(tags) == 1 and tags[0].strip():
        return tags[0].strip(), True
    return (tags[-1].strip() if tags else (reply or "").strip()), False


@dataclass(frozen=True)
class Score:
    reward: float
    f1: float
    exact_match: bool
    formatted: bool
    answer: str


def score(reply: str, answers: tuple[str, ...] | list[str]) -> Score:
    """The reward of a reply against the gold answer and its aliases (the best match counts)."""
    answer, formatted = extract_answer(reply)
    f1 = max((token_f1(answer, gold) for gold in answers), default=0.0)
    exact = any(normalize(answer) == normalize(gold) for gold in answers)
    return Score(FORMAT_WEIGHT * formatted + (1 - FORMAT_WEIGHT) * f1, f1, exact, formatted, answer)
