"""The MuSiQue and corpus loaders, the BM25 index and the reward, on hand-written rows in the public layouts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from recipes.conftest import REPO

from recipes.rag.index import Bm25Index, format_hits, tokenize
from recipes.rag.musique_data import (
    Passage, corpus_from_musique, load_corpus, load_musique, question_from_row, to_rollout_input)
from recipes.rag.reward import FORMAT_WEIGHT, extract_answer, normalize, score, token_f1

# A row as MuSiQue's musique_ans_v1.0_dev.jsonl holds it (trimmed to 3 of its 20 paragraphs), and an unanswerable
# one from the `full` variant.
MUSIQUE = [
    {"id": "2hop__460946_294723", "paragraphs": [
        {"idx": 0, "title": "Green", "paragraph_text": "Green is the color between blue and yellow.", "is_supporting": False},
        {"idx": 1, "title": "Miquette Giraudy", "paragraph_text": "Miquette Giraudy is a French musician, "
         "partner of Steve Hillage.", "is_supporting": True},
        {"idx": 2, "title": "Steve Hillage", "paragraph_text": "Steve Hillage is an English guitarist "
         "and a member of Gong.", "is_supporting": True}],
     "question": "Who is the spouse of the Green performer?", "question_decomposition": [
        {"id": 460946, "question": "Green >> performer", "answer": "Steve Hillage", "paragraph_support_idx": 2},
        {"id": 294723, "question": "#1 >> spouse", "answer": "Miquette Giraudy", "paragraph_support_idx": 1}],
     "answer": "Miquette Giraudy", "answer_aliases": ["Miquette"], "answerable": True},
    {"id": "2hop__x", "question": "Unanswerable?", "answer": "", "answerable": False, "paragraphs": []},
]


def test_musique_loader_reads_answers_aliases_hops_and_support(tmp_path):
    path = tmp_path / "musique_ans_v1.0_dev.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in MUSIQUE) + "\n")
    [q] = load_musique(path)
    assert q.id == "2hop__460946_294723" and q.answers == ("Miquette Giraudy", "Miquette")
    assert q.hops == ("Green >> performer", "#1 >> spouse")
    assert q.supporting_titles == ("Miquette Giraudy", "Steve Hillage")
    assert question_from_row(to_rollout_input(q)).answers == q.answers


def test_musique_loader_names_the_line_of_a_bad_row(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(MUSIQUE[0]) + "\n" + json.dumps({"id": "q", "question": "no answer"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:2: a MuSiQue row needs a question and an answer"):
        load_musique(path)
    path.write_text("[1, 2]\n")
    for load in (load_musique, load_corpus, corpus_from_musique):
        with pytest.raises(ValueError, match="bad.jsonl:1: not a JSON object"):
            load(path)


def test_corpus_command_names_a_missing_or_bad_file_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(MUSIQUE[0]) + "\n{not json\n")
    for source, named in [(tmp_path / "absent.jsonl", "absent.jsonl"), (bad, "bad.jsonl:2: not JSON")]:
        out = tmp_path / "corpus.jsonl"
        command = [sys.executable, "-m", "recipes.rag.musique_data", "corpus", str(source), str(out)]
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and named in result.stderr and "Traceback" not in result.stderr, result.stderr

def test_corpus_loader_reads_title_text_and_flashrag_contents(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"id": "1", "title": "Gong", "text": "Gong is a band."}) + "\n"
                    + json.dumps({"id": "2", "contents": "\"Steve Hillage\"\nSteve Hillage is a guitarist."}) + "\n")
    assert load_corpus(path) == [Passage("1", "Gong", "Gong is a band."),
                                 Passage("2", "Steve Hillage", "Steve Hillage is a guitarist.")]
    path.write_text(json.dumps({"id": "3", "title": "no text"}) + "\n")
    with pytest.raises(ValueError, match="corpus.jsonl:1: a passage needs text"):
        load_corpus(path)


def test_a_corpus_built_from_musique_paragraphs_has_each_once(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(MUSIQUE[0]) + "\n" + json.dumps(MUSIQUE[0]) + "\n")
    assert [p.title for p in corpus_from_musique(path)] == ["Green", "Miquette Giraudy", "Steve Hillage"]


def test_bm25_ranks_the_passage_with_the_query_terms_first():
    index = Bm25Index([Passage("1", "Green", "Green is a color."), Passage("2", "Steve Hillage", "A guitarist in Gong."),
                       Passage("3", "Gong", "Gong is a band with a guitarist.")])
    hits = index.search("Who is the guitarist Steve Hillage?", k=2)
    assert [h.passage.id for h in hits] == ["2", "3"]
    assert index.search("the of and") == []
    assert format_hits(hits[:1]) == "[1] Steve Hillage: A guitarist in Gong."
    assert tokenize("The Band's guitarist, 1970") == ["band", "s", "guitarist", "1970"]
    with pytest.raises(ValueError, match="no passages"):
        Bm25Index([])


@pytest.mark.parametrize(("predicted", "gold", "f1"), [
    ("Miquette Giraudy", "Miquette Giraudy", 1.0), ("the Miquette Giraudy.", "Miquette Giraudy", 1.0),
    ("Giraudy", "Miquette Giraudy", 2 / 3), ("Steve", "Miquette Giraudy", 0.0), ("", "x", 0.0)])
def test_token_f1(predicted, gold, f1):
    assert token_f1(predicted, gold) == pytest.approx(f1)


def test_reward_weighs_format_and_f1_and_reports_exact_match():
    answers = ("Miquette Giraudy", "Miquette")
    full = score("Searching done. <answer>Miquette Giraudy</answer>", answers)
    assert (full.reward, full.exact_match, full.formatted) == (1.0, True, True)
    alias = score("<answer>miquette</answer>", answers)
    assert alias.reward == 1.0 and alias.exact_match
    bare = score("Miquette Giraudy", answers)
    assert bare.reward == pytest.approx(1 - FORMAT_WEIGHT) and not bare.formatted and bare.exact_match
    partial = score("<answer>Giraudy</answer>", answers)
    assert partial.reward == pytest.approx(FORMAT_WEIGHT + (1 - FORMAT_WEIGHT) * 2 / 3) and not partial.exact_match
    two_tags = score("<answer>a</answer><answer>Miquette</answer>", answers)
    assert not two_tags.formatted and two_tags.answer == "Miquette"
    assert extract_answer("<answer>  </answer>") == ("", False)
    assert normalize("The  Band!") == "band"


def test_shipped_questions_are_in_the_musique_layout_and_bm25_finds_their_supporting_passages():
    from recipes.rag.generate_data import HERE

    corpus = load_corpus(HERE / "data" / "corpus.jsonl")
    index = Bm25Index(corpus)
    for split, count in [("train", 240), ("val", 60)]:
        questions = load_musique(HERE / "data" / f"{split}.jsonl")
        assert len(questions) == count
        assert {len(q.hops) for q in questions} == {2, 3}
    rows = [json.loads(line) for line in open(HERE / "data" / "val.jsonl")]
    found = 0
    for row in rows:
        hop = row["question_decomposition"][0]
        title = row["paragraphs"][hop["paragraph_support_idx"]]["title"]
        found += title in [h.passage.title for h in index.search(hop["question"], k=3)]
    assert found == len(rows)  # every first hop is retrievable by its own sub-question
