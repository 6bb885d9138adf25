"""GPU check of the torch engine: starts `arclight-torch serve` on a real architecture at real size (random init,
Qwen2-0.5B's config, bf16) and drives it over its HTTP protocol only, as arclight does: batched generation,
logprobs, a few GRPO-shaped train steps with LoRA and with full fine-tuning, save/load; prints tokens/s and peak GPU
memory. Needs only torch, transformers, peft and safetensors (no Node.js, no vLLM).

Usage (repository root):  PYTHONPATH=python python bench/gpu-check/check.py
CPU smoke run of the script itself: PYTHONPATH=python python bench/gpu-check/check.py --device cpu --model new:qwen2-tiny
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request


def post(url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        return json.loads(response.read())


def get(url: str, path: str) -> dict:
    with urllib.request.urlopen(url + path, timeout=60) as response:
        return json.loads(response.read())


def start_worker(args, lora: bool) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "arclight_torch", "serve", "--model", args.model, "--device", args.device,
            "--dtype", args.dtype, "--context-length", str(args.context), "--port", "0"]
    if lora:
        argv += ["--lora-rank", "16", "--lora-alpha", "32", "--lora-targets", "q_proj,k_proj,v_proj,o_proj"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=os.environ)
    deadline = time.time() + 600
    while time.time() < deadline:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with {child.wait()} before listening")
        if "listening on" in line:
            return child, line.split("listening on ")[1].strip()
    child.kill()
    raise RuntimeError("worker did not listen within 600 s")


def grpo_rows(results: list[dict], group: int, rng: random.Random) -> list[dict]:
    """Rows of one GRPO step: random rewards per sequence, advantages normalised within each group."""
    rows = []
    for g in range(0, len(results), group):
        members = results[g : g + group]
        rewards = [rng.random() for _ in members]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards)) + 1e-6
        for r, reward in zip(members, rewards):
            prompt, response = r["prompt_token_ids"], r["token_ids"]
            n = len(prompt) + len(response)
            rows.append({
                "token_ids": prompt + response,
                "loss_mask": [0] * len(prompt) + [1] * len(response),
                "advantages": [0.0] * len(prompt) + [(reward - mean) / std] * len(response),
                "old_logprobs": [0.0] * len(prompt) + r["logprobs"],
            })
            assert len(rows[-1]["token_ids"]) == n
    return rows


def run_mode(args, lora: bool) -> dict:
    mode = "lora" if lora else "full"
    child, url = start_worker(args, lora)
    try:
        info = get(url, "/v1/info")
        rng = random.Random(0)
        prompts = [[rng.randrange(3, 500) for _ in range(args.prompt_len)] for _ in range(args.prompts)]
        requests = [
            {"prompt_token_ids": p, "sampling": {"temperature": 1.0, "max_tokens": args.new_tokens, "seed": i * 100 + k}}
            for i, p in enumerate(prompts) for k in range(args.group)
        ]
        post(url, "/v1/generate", {"requests": requests[:2]})  # warm-up: CUDA context, kernels, allocator
        start = time.perf_counter()
        results = post(url, "/v1/generate", {"requests": requests})["results"]
        gen_s = time.perf_counter() - start
        gen_tokens = sum(len(r["token_ids"]) for r in results)
        sequences = [r["prompt_token_ids"] + r["token_ids"] for r in results]
        start = time.perf_counter()
        scored = post(url, "/v1/logprobs", {"token_ids": sequences})["logprobs"]
        score_s = time.perf_counter() - start
        drift = max(abs(lp - s[len(r["prompt_token_ids"]) + t]) for r, s in zip(results, scored) for t, lp in enumerate(r["logprobs"]))
        loss = {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.28, "kl_coef": 0.0, "aggregation": "token-mean"}
        optimizer = {"learning_rate": 1e-4 if lora else 1e-5, "weight_decay": 0.0, "max_grad_norm": 1.0, "micro_batch_size": args.micro_batch}
        steps = []
        for _ in range(args.steps):
            rows = grpo_rows(results, args.group, rng)
            start = time.perf_counter()
            metrics = post(url, "/v1/train_step", {"rows": rows, "loss": loss, "optimizer": optimizer})["metrics"]
            steps.append({"s": time.perf_counter() - start, **metrics})
        with tempfile.TemporaryDirectory() as ckpt:
            before = post(url, "/v1/logprobs", {"token_ids": sequences[:2]})["logprobs"]
            post(url, "/v1/save_checkpoint", {"dir": ckpt})
            files = sorted(os.listdir(ckpt))
            post(url, "/v1/load_checkpoint", {"dir": ckpt})
            after = post(url, "/v1/logprobs", {"token_ids": sequences[:2]})["logprobs"]
        train_tokens = sum(s["tokens"] for s in steps[1:]) or steps[0]["tokens"]
        train_s = sum(s["s"] for s in steps[1:]) or steps[0]["s"]
        peak = get(url, "/v1/info")["peak_memory_bytes"]
        return {
            "mode": mode,
            "model": info["model"],
            "device": info["device"],
            "dtype": info["dtype"],
            "parameters": info["parameters"],
            "trainable_parameters": info["trainable_parameters"],
            "generate_tokens_per_s": round(gen_tokens / gen_s, 1),
            "generated_tokens": gen_tokens,
            "logprobs_tokens_per_s": round(sum(map(len, sequences)) / score_s, 1),
            "max_sampled_vs_scored_logprob_diff": round(drift, 4),
            "train_tokens_per_s_after_first_step": round(train_tokens / train_s, 1),
            "train_steps": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()} for s in steps],
            "checkpoint_files": files,
            "checkpoint_round_trip_exact": before == after,
            "peak_gpu_memory_gib": None if peak is None else round(peak / 2**30, 2),
        }
    finally:
        child.terminate()
        child.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="new:qwen2-0.5b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--modes", default="lora,full")
    args = parser.parse_args()
    failed = False
    for mode in args.modes.split(","):
        report = run_mode(args, lora=mode == "lora")
        print(json.dumps(report), flush=True)
        ok = report["checkpoint_round_trip_exact"] and all(not s["non_finite_skipped"] for s in report["train_steps"])
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
