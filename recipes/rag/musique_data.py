"""MuSiQue questions and retrieval corpora: loaders for the public layouts.

MuSiQue (`musique_ans_v1.0_{train,dev}.jsonl`, `musique_full_v1.0_*.jsonl`) rows; what the loader reads:
- `id`, `question`, `answer` (required; rows with `answerable: false`, in the `full` variant, are skipped);
- `answer_aliases` (optional list): also accepted answers;
- `paragraphs` (optional): `[{idx, title, paragraph_text, is_supporting}]`, the question's 20 candidate paragraphs;
- `question_decomposition` (optional): `[{id, question, answer, paragraph_support_idx}]`, the hops.

A corpus file is JSONL, one passage a line: `{"id", "title", "text"}`, or FlashRAG's `{"id", "contents"}` (title on
the first line of `contents`). `corpus_from_musique` builds one from the questions' own paragraphs when no Wikipedia
dump is at hand (each distinct title + text once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]
    """The answer first, then its aliases."""
    hops: tuple[str, ...] = ()
    """The decomposition's sub-questions (`#1` names the first hop's answer), when given."""
    supporting_titles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


def _jsonl(path: str | Path):
    with open(path, encoding="utf-8") as file:
        for line, text in enumerate(file, 1):
            if text.strip():
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{line}: not JSON ({err.msg})") from None
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{line}: not a JSON object")
                yield line, row


def question_from_row(row: dict[str, Any], line: int = 0) -> Question | None:
    """One MuSiQue row as a `Question`; None for an unanswerable one.

    :raises ValueError: a row without `question` or `answer`
    """
    if row.get("answerable") is False:
        return None
    if not isinstance(row.get("question"), str) or not isinstance(row.get("answer"), str):
        raise ValueError("a MuSiQue row needs a question and an answer (text)")
    paragraphs = row.get("paragraphs") or []
    return Question(
        id=str(row.get("id") or f"line-{line}"),
        question=row["question"],
        answers=(row["answer"], *[a for a in row.get("answer_aliases") or [] if isinstance(a, str)]),
        hops=tuple(h.get("question", "") for h in row.get("question_decomposition") or []),
        supporting_titles=tuple(p.get("title", "") for p in paragraphs if p.get("is_supporting")),
    )


def load_musique(path: str | Path, limit: int | None = None) -> list[Question]:
    """Reads MuSiQue JSONL (answerable questions only).

    :raises ValueError: naming the file and line of a row that is not a JSON object or lacks `question`/`answer`
    """
    questions = []
    for line, row in _jsonl(path):
        try:
            question = question_from_row(row, line)
        except ValueError as err:
            raise ValueError(f"{path}:{line}: {err}") from None
        if question is not None:
            questions.append(question)
        if limit is not None and len(questions) >= limit:
            break
    return questions


def load_corpus(path: str | Path) -> list[Passage]:
    """Reads a corpus JSONL file (`{id, title, text}` or `{id, contents}`).

    :raises ValueError: naming the line of a row that is not a JSON object or a passage without `text`/`contents`
    """
    passages = []
    for line, row in _jsonl(path):
        if isinstance(row.get("text"), str):
            title, text = str(row.get("title") or ""), row["text"]
        elif isinstance(row.get("contents"), str):
            title, _, text = row["contents"].partition("\n")
            title = title.strip().strip('"')
        else:
            raise ValueError(f"{path}:{line}: a passage needs text (with title) or contents")
        passages.append(Passage(str(row.get("id") or f"p{line}"), title, text))
    return passages


def corpus_from_musique(path: str | Path) -> list[Passage]:
    """The distinct paragraphs of a MuSiQue file, as a corpus."""
    seen: dict[tuple[str, str], Passage] = {}
    for _, row in _jsonl(path):
        for p in row.get("paragraphs") or []:
            key = (p.get("title", ""), p.get("paragraph_text", ""))
            if key not in seen:
                seen[key] = Passage(f"m{len(seen)}", key[0], key[1])
    return list(seen.values())


def to_rollout_input(question: Question) -> dict[str, Any]:
    """A trainer data row: MuSiQue's own field names, so the agent reads either file the same way."""
    return {"id": question.id, "data_id": question.id, "question": question.question,
            "answer": question.answers[0], "answer_aliases": list(question.answers[1:])}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build a corpus JSONL from the paragraphs of a MuSiQue file.")
    parser.add_argument("command", choices=["corpus"])
    parser.add_argument("source", help="MuSiQue JSONL, e.g. musique_ans_v1.0_train.jsonl")
    parser.add_argument("out", help="corpus JSONL to write ({id, title, text} per passage)")
    args = parser.parse_args()
    try:
        corpus = corpus_from_musique(args.source)
        with open(args.out, "w", encoding="utf-8") as out:
            for passage in corpus:
                out.write(json.dumps({"id": passage.id, "title": passage.title, "text": passage.text}) + "\n")
    except (OSError, ValueError) as err:  # a missing file or a bad row: its message names it, no traceback
        parser.exit(2, f"{parser.prog}: {err}\n")
    print(f"wrote {len(corpus)} passages to {args.out}")
