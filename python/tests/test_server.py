"""The HTTP protocol: answers in its shapes, and bad requests get a 4xx with a JSON `detail`."""


def test_info_reports_the_protocol_and_model(client):
    status, info = client.get("/v1/info")
    assert status == 200
    assert info["protocol_version"] == 1
    assert (info["vocab_size"], info["context_length"], info["policy_version"]) == (512, 64, 0)


def test_generate_train_and_score_round_trip_over_http(client):
    status, body = client.post("/v1/generate", {"requests": [{"prompt_token_ids": [1, 2], "sampling": {"seed": 1}}]})
    assert status == 200
    result = body["results"][0]
    assert len(result["token_ids"]) == len(result["logprobs"]) > 0
    row = {"token_ids": [1, 2, *result["token_ids"]], "loss_mask": [0, 0] + [1] * len(result["token_ids"])}
    row["advantages"] = row["loss_mask"]
    loss = {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.2, "aggregation": "token-mean"}
    status, body = client.post("/v1/train_step", {"rows": [row], "loss": loss, "optimizer": {"learning_rate": 1e-3}})
    assert status == 200
    assert body["metrics"]["tokens"] == len(result["token_ids"])
    assert body["policy_version"] == 1


def test_a_missing_field_is_a_422_with_its_location(client):
    status, body = client.post("/v1/train_step", {"rows": [{"token_ids": [1, 2]}], "loss": {}, "optimizer": {}})
    assert status == 422
    assert body["detail"][0]["loc"] == ["body", "rows", 0, "loss_mask"]
    assert body["detail"][0]["type"] == "missing"


def test_an_unknown_field_is_a_422(client):
    status, body = client.post("/v1/logprobs", {"token_ids": [[1, 2]], "tokens": 3})
    assert status == 422
    assert body["detail"][0]["type"] == "extra_forbidden"


def test_a_prompt_longer_than_the_context_is_a_400_out_of_range(client):
    status, body = client.post("/v1/generate", {"requests": [{"prompt_token_ids": [1] * 64}]})
    assert status == 400
    assert body["code"] == "out_of_range"
    assert "context of 64 tokens" in body["detail"]


def test_a_token_outside_the_vocabulary_is_a_400(client):
    status, body = client.post("/v1/logprobs", {"token_ids": [[1, 512]]})
    assert (status, body["code"]) == (400, "out_of_range")


def test_malformed_json_is_a_400_and_an_unknown_route_a_404(client):
    status, body = client.post("/v1/generate", None, raw=b"{not json")
    assert status == 400 and "not JSON" in body["detail"]
    status, body = client.post("/v1/nope", {})
    assert status == 404 and "detail" in body


def test_a_missing_checkpoint_is_a_404(client, tmp_path):
    status, body = client.post("/v1/load_checkpoint", {"dir": str(tmp_path / "none")})
    assert (status, body["code"]) == (404, "checkpoint_missing")


def test_chat_template_and_tokenize_agree(client):
    messages = [{"role": "user", "content": "What is 2+2?"}]
    status, chat = client.post("/v1/apply_chat_template", {"messages": messages})
    assert status == 200
    assert chat["text"].endswith("<|im_start|>assistant\n")
    _, tokens = client.post("/v1/tokenize", {"text": chat["text"]})
    assert tokens["token_ids"] == chat["token_ids"]
    _, text = client.post("/v1/detokenize", {"token_ids": chat["token_ids"]})
    assert text["text"] == chat["text"]
