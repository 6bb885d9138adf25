"""rag through the real stack: gateway and controller child processes, the agent class run by the SDK's runner, BM25
over the shipped corpus, and a scripted model that searches each hop's sub-question and answers only from what the
searches returned (an answer the search results lack becomes `unknown`); one question it answers without the tag."""

from __future__ import annotations

import json
import time

from recipes.rag.generate_data import HERE
from recipes.testing.scripted_model import Answer, ScriptedModel, last_user_text, tool_results

ROWS = [json.loads(line) for line in open(HERE / "data" / "val.jsonl")][:6]
HOPS = {row["question"]: row["question_decomposition"] for row in ROWS}
UNTAGGED = ROWS[1]["question"]


def searcher(body):
    hops, results = HOPS[last_user_text(body)], tool_results(body)
    if len(results) < len(hops):
        query = hops[len(results)]["question"]
        for k, hop in enumerate(hops[: len(results)], 1):
            query = query.replace(f"#{k}", hop["answer"])
        return Answer(tool_calls=[("search", {"query": query})])
    found = all(hop["answer"] in text for hop, text in zip(hops, results))
    answer = hops[-1]["answer"] if found else "unknown"
    return Answer(content=answer if last_user_text(body) == UNTAGGED else f"<answer>{answer}</answer>")


def test_rag_rollouts_score_format_and_f1_from_real_retrieval(gateway, start_controller):
    model = ScriptedModel(searcher)
    try:
        gateway.ok("POST", "/api/models", [{"model": "policy", "endpoint": model.url}])
        created = gateway.ok("POST", "/api/rollouts", [{"input": row} for row in ROWS])
        ids = [r["rollout_id"] for r in created]
        started = time.monotonic()
        start_controller("recipes.rag.agent:RagAgent")
        done = gateway.wait_terminal(ids, timeout_s=300)
        elapsed = time.monotonic() - started
    finally:
        model.close()
    logs = {r["rollout_id"]: gateway.events(r["rollout_id"], "log") for r in done if r["status"]["state"] != "succeeded"}
    assert [r["status"]["state"] for r in done] == ["succeeded"] * len(ROWS), logs
    for row, rollout in zip(ROWS, done):
        rid = rollout["rollout_id"]
        hops = len(row["question_decomposition"])
        [reward] = gateway.events(rid, "reward")
        [info] = gateway.events(rid, "rag")
        assert info["data"]["exact_match"] and info["data"]["f1"] == 1.0 and info["data"]["searches"] == hops
        assert reward["data"]["value"] == (0.9 if row["question"] == UNTAGGED else 1.0)
        assert len(gateway.events(rid, "model_request", triplet=True)) == hops + 1
        searches = [e["data"] for e in gateway.events(rid, "span") if e["data"]["name"] == "execute_tool search"]
        assert len(searches) == hops
        assert row["answer"] in searches[-1]["attributes"]["gen_ai.tool.call.result"]
    print(f"rag smoke: {len(ROWS)} rollouts in {elapsed:.1f} s ({len(ROWS) / elapsed:.2f} rollouts/s)")
