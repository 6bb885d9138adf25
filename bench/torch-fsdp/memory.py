"""Peak RSS per rank of one train step on a Qwen2-shaped model at Qwen2.5's 152k vocabulary with one row of T
tokens, on CPU: 1 and 2 ranks (torchrun, gloo), with and without activation checkpointing and chunked logprobs;
each beside the arithmetic it should follow. The model is written first as a random-initialised Hugging Face
folder (Qwen2 shape, vocabulary 151936, --hidden, --layers; 2 layers of 128 by default, 19.9M parameters, so that
the output layer dominates as in real models and a 4k-token step runs on a CPU) and loaded as --model.

    PYTHONPATH=python nice -n 10 python bench/torch-fsdp/memory.py --tokens 4096 --cases 1:off:0,1:off:1024,2:off:1024

Expected per rank, N parameters, W ranks, T tokens, V vocabulary, C hidden, L layers, chunk K:
  state   = 16 B x N / W  (float32 shards: weights 4, gradients 4, AdamW moments 8)
  root    = 4 B x (V x C) (the root unit, embeddings tied to the output layer, is gathered whole on every rank
                           through forward and backward: at V = 152k it dominates small models)
  logits  = 4 B x T x V x 3 (logits, log-softmax and its gradient, float32) without chunking; x K / T with it
  acts    = per-layer activations x L without checkpointing (~ 4 B x T x (14 C + 3 x 1408 + heads x T)), 1 layer's with
plus the Python/torch runtime (~0.35 GB, measured as RSS after import)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
GB = 1e9


def write_model(folder: Path, hidden: int, layers: int) -> dict:
    """A random-initialised Qwen2 folder at Qwen2.5's vocabulary; returns its config."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=151936, hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                         num_hidden_layers=layers, num_attention_heads=hidden // 32, num_key_value_heads=max(1, hidden // 128),
                         max_position_embeddings=32768, tie_word_embeddings=True, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(Path(__file__).parents[2] / "python/arclight_torch/assets/tokenizer")).save_pretrained(folder)
    return config.to_dict()


def run(model: Path, ranks: int, checkpointing: bool, chunk: int, tokens: int) -> list[dict]:
    step = [str(HERE / "memory_step.py"), "--model", str(model), "--tokens", str(tokens), "--chunk", str(chunk)]
    if checkpointing:
        step.append("--checkpointing")
    if ranks == 1:
        argv = [sys.executable, *step]
    else:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *step]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def expected(n: int, ranks: int, checkpointing: bool, chunk: int, tokens: int, config: dict) -> dict:
    vocab, hidden, layers = config["vocab_size"], config["hidden_size"], config["num_hidden_layers"]
    inter, heads = config["intermediate_size"], config["num_attention_heads"]
    state = 16 * n / ranks
    root = 4 * vocab * hidden
    logits = 4 * tokens * vocab * 3 * (min(chunk, tokens) / tokens if chunk > 0 else 1)
    per_layer = 4 * tokens * (14 * hidden + 3 * inter + heads * tokens)
    acts = per_layer * (1 if checkpointing else layers)
    return {"state": state, "root": root, "logits": logits, "acts": acts, "total": state + root + logits + acts}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--cases", default="1:off:0,1:off:1024,2:off:1024", help="RANKS:CKPT:CHUNK,... (CHUNK 0: whole)")
    a = parser.parse_args()
    cases = [(int(r), c == "on", int(k)) for r, c, k in (case.split(":") for case in a.cases.split(","))]
    with tempfile.TemporaryDirectory() as folder:
        config = write_model(Path(folder), a.hidden, a.layers)
        print(f"one SFT step, Qwen2 shape, vocab {config['vocab_size']}, hidden {a.hidden}, {a.layers} layers, 1 row x "
              f"{a.tokens} tokens, float32, CPU (gloo); GB = 1e9 bytes; load average {os.getloadavg()[0]:.1f}")
        print("ranks ckpt chunk | peak RSS/rank | after load | state/rank | "
              "expected: state + root + logits + acts = total (+ runtime)")
        for ranks, ckpt, chunk in cases:
            measure(Path(folder), ranks, ckpt, chunk, a.tokens, config)


def measure(model: Path, ranks: int, ckpt: bool, chunk: int, tokens: int, config: dict) -> None:
    results = run(model, ranks, ckpt, chunk, tokens)
    peak = max(r["peak_rss"] for r in results)
    load = max(r["rss_after_load"] for r in results)
    e = expected(results[0]["parameters"], ranks, ckpt, chunk, tokens, config)
    state = max(r["state_bytes"] for r in results)
    print(f"{ranks:5d} {'on ' if ckpt else 'off'}  {chunk or 'all':>5} | {peak / GB:13.2f} | {load / GB:10.2f} | "
          f"{state / GB:11.3f} | "
          f"{e['state'] / GB:.2f} + {e['root'] / GB:.2f} + {e['logits'] / GB:.2f} + {e['acts'] / GB:.2f} = "
          f"{e['total'] / GB:.2f}   (step {max(r['step_s'] for r in results)} s, loss {results[0]['loss']:.4f})",
          flush=True)


if __name__ == "__main__":
    main()
