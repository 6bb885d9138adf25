"""The rag agent: a multi-hop question, a model with a `search` tool over a local index, reward = weighted format
score + token F1 (exact match reported).

Run by the controller as `agent_class: recipes.rag.agent:RagAgent` (from the repository root). The model calls
`search(query)` as often as it likes (at most `RAG_MAX_TURNS` model calls) and ends with `<answer>…</answer>`.

Environment (all optional): `RAG_CORPUS` (corpus JSONL; default the shipped `data/corpus.jsonl`), `RAG_TOP_K`
(passages per search, default 3), `RAG_EMBEDDING_MODEL` (a local sentence-transformers folder: dense retrieval instead
of BM25), `RAG_MAX_TURNS` (default 5), `RAG_MAX_TOKENS` (default: not sent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arclight_agent import emit_event, span, tool_call, traceparent
from openai import BadRequestError, OpenAI

from .index import Bm25Index, DenseIndex, format_hits
from .musique_data import load_corpus, question_from_row
from .reward import score

HERE = Path(__file__).resolve().parent
SYSTEM_PROMPT = (
    "Answer the question using the search tool to find facts; questions may need several searches. "
    "Give the final answer as <answer>...</answer>."
)
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the document collection; returns the best-matching passages.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


class RagAgent:
    """An Agent Lightning `LitAgent`-shaped agent: `rollout(task, resources, rollout)` returns the reward."""

    def __init__(self) -> None:
        passages = load_corpus(os.environ.get("RAG_CORPUS") or HERE / "data" / "corpus.jsonl")
        model = os.environ.get("RAG_EMBEDDING_MODEL")
        self.index = DenseIndex(passages, model) if model else Bm25Index(passages)
        self.top_k = int(os.environ.get("RAG_TOP_K", "3"))
        self.max_turns = int(os.environ.get("RAG_MAX_TURNS", "5"))
        max_tokens = os.environ.get("RAG_MAX_TOKENS")
        self.limits = {} if max_tokens is None else {"max_tokens": int(max_tokens)}

    def rollout(self, task: dict[str, Any], resources: dict[str, Any], rollout: dict[str, Any]) -> float:
        question = question_from_row(task)
        if question is None:
            raise ValueError(f"rollout {rollout['rollout_id']}: the task is an unanswerable MuSiQue question")
        llm = resources["main_llm"]
        client = OpenAI(base_url=llm.endpoint, api_key=llm.api_key or "none", max_retries=50)
        with span("rag", {"gen_ai.agent.name": "rag", "rag.question_id": question.id}):
            reply, turns, searches = self.solve(client, llm.model, question.question)
        result = score(reply, question.answers)
        emit_event("rag", {"question_id": question.id, "answer": result.answer, "gold": list(question.answers),
                           "f1": result.f1, "exact_match": result.exact_match, "formatted": result.formatted,
                           "turns": turns, "searches": searches})
        return result.reward

    def solve(self, client: OpenAI, model: str, question: str) -> tuple[str, int, int]:
        """The tool loop; a 400 from the model server (context full) ends it. Returns reply, model calls, searches."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
        reply, turns, searches = "", 0, 0
        while turns < self.max_turns:
            turns += 1
            try:
                completion = client.chat.completions.create(model=model, messages=messages, tools=[SEARCH_TOOL],
                                                            extra_headers=traceparent(), **self.limits)
            except BadRequestError:
                break
            message = completion.choices[0].message
            reply = message.content or ""
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                searches += 1
                messages.append({"role": "tool", "tool_call_id": call.id, "content": self.search(call)})
        return reply, turns, searches

    def search(self, call: Any) -> str:
        """Runs one `search` tool call, traced as a tool-call span; a bad call comes back as an error text."""
        with tool_call(call.function.name, {"gen_ai.tool.call.id": call.id,
                                            "gen_ai.tool.call.arguments": call.function.arguments}) as s:
            try:
                query = json.loads(call.function.arguments or "{}").get("query")
            except (json.JSONDecodeError, AttributeError):
                query = None
            if call.function.name != "search":
                text = f"error: unknown tool {call.function.name}; the only tool is search"
            elif not isinstance(query, str):
                text = "error: search takes {\"query\": \"...\"}"
            else:
                text = format_hits(self.index.search(query, self.top_k))
            s.set_attribute("gen_ai.tool.call.result", text)
        return text
