"""Retrieval over a passage corpus: BM25 (`rank-bm25`) by default; dense retrieval (cosine similarity of
`sentence-transformers` embeddings, as the reference setup's BGE index) when an embedding model is named and the
package is installed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rank_bm25 import BM25Okapi

from .musique_data import Passage

STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the to was were which who whom what where "
    "when how did does do with".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens without stopwords (BM25's terms)."""
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOPWORDS]


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


class Bm25Index:
    """BM25 (Okapi, k1 1.5, b 0.75) over title + text of each passage."""

    def __init__(self, passages: list[Passage]):
        if not passages:
            raise ValueError("the corpus has no passages")
        self.passages = passages
        self.bm25 = BM25Okapi([tokenize(f"{p.title} {p.text}") for p in passages])

    def search(self, query: str, k: int = 3) -> list[Hit]:
        terms = tokenize(query)
        if not terms:
            return []
        scores = self.bm25.get_scores(terms)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [Hit(self.passages[i], float(scores[i])) for i in order if scores[i] > 0]


class DenseIndex:
    """Cosine similarity of normalised embeddings from a local sentence-transformers model folder (e.g. BGE)."""

    def __init__(self, passages: list[Passage], model_path: str):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ImportError("dense retrieval needs sentence-transformers: pip install sentence-transformers") from err
        self.passages = passages
        self.model = SentenceTransformer(model_path)
        self.embeddings = self.model.encode([f"{p.title} {p.text}" for p in passages], normalize_embeddings=True)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        query_embedding = self.model.encode([query], normalize_embeddings=True)[0]
        scores = self.embeddings @ query_embedding
        order = scores.argsort()[::-1][:k]
        return [Hit(self.passages[i], float(scores[i])) for i in order]


def format_hits(hits: list[Hit]) -> str:
    """The search tool's answer: numbered passages with their titles."""
    if not hits:
        return "No results."
    return "\n".join(f"[{i}] {hit.passage.title}: {hit.passage.text}" for i, hit in enumerate(hits, 1))
