"""Generation: seed determinism, sampled logprobs agree with scoring, stops and limits."""

import pytest

from arclight_torch.schema import GenerationRequest, InvalidRequest, SamplingParams, parse_sampling


def _request(prompt, **sampling) -> GenerationRequest:
    return GenerationRequest(prompt, SamplingParams(**({"max_tokens": 8} | sampling)))


def test_the_same_seed_and_prompt_give_the_same_tokens(worker):
    first = worker.generate([_request([1, 5, 9], seed=7)])
    second = worker.generate([_request([1, 5, 9], seed=7)])
    assert first[0]["token_ids"] == second[0]["token_ids"]
    assert first[0]["logprobs"] == second[0]["logprobs"]


def test_different_seeds_give_different_tokens(worker):
    results = worker.generate([_request([1, 5, 9], seed=s, max_tokens=12) for s in range(4)])
    assert len({tuple(r["token_ids"]) for r in results}) > 1


def test_sampled_logprobs_equal_scored_logprobs_at_temperature_1(worker):
    # Left-padded batched decoding with a KV cache must score exactly what a full forward pass scores.
    results = worker.generate([_request([1, 5, 9], seed=3), _request([4], seed=4)])
    for r in results:
        scored = worker.logprobs([r["prompt_token_ids"] + r["token_ids"]])[0]
        assert len(scored) == len(r["prompt_token_ids"]) + len(r["token_ids"])
        for t, lp in enumerate(r["logprobs"]):
            assert abs(lp - scored[len(r["prompt_token_ids"]) + t]) < 1e-4


def test_top_k_1_is_greedy_and_its_logprob_is_0(worker):
    greedy = worker.generate([_request([1, 5], temperature=0)])[0]
    top1 = worker.generate([_request([1, 5], top_k=1, seed=9)])[0]
    assert top1["token_ids"] == greedy["token_ids"]
    assert all(lp == 0 for lp in top1["logprobs"])
    assert all(lp < 0 for lp in greedy["logprobs"])


def test_a_stop_token_ends_the_sequence_and_is_reported(worker):
    free = worker.generate([_request([1, 5], temperature=0, max_tokens=6)])[0]
    stop_id = free["token_ids"][2]
    stopped = worker.generate([_request([1, 5], temperature=0, max_tokens=6, stop_token_ids=[stop_id])])[0]
    end = free["token_ids"].index(stop_id) + 1
    assert stopped["token_ids"] == free["token_ids"][:end]
    assert (stopped["finish_reason"], stopped["stop_reason"]) == ("stop", stop_id)


def test_max_tokens_and_the_context_bound_the_response(worker):
    [short, near_end] = worker.generate([_request([1], max_tokens=3), _request([1] * 60, max_tokens=20)])
    assert len(short["token_ids"]) <= 3
    assert len(near_end["token_ids"]) <= 64 - 60
    assert near_end["finish_reason"] in ("length", "stop")


def test_top_k_minus_1_is_off_as_in_vllm_and_minus_2_is_refused():
    assert parse_sampling({"top_k": -1}, ["sampling"]).top_k == 0
    assert parse_sampling({"top_k": 5}, ["sampling"]).top_k == 5
    with pytest.raises(InvalidRequest):
        parse_sampling({"top_k": -2}, ["sampling"])
