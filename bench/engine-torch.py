"""PyTorch column of bench/engine.ts: the same pre-LN GPT as the embedded engine (learned positions, GELU tanh MLP,
untied head, LayerNorm eps 1e-5) on the same shape, in plain PyTorch on the CPU with the same thread count.

A worker driven line by line over stdin, so that bench/engine.ts can interleave its rounds with the embedded engine's:
  train B T           one AdamW step on B random rows of T ids (SFT cross-entropy on every next token, clip 1)
  sample N P NEW      batched KV-cache sampling: N prompts of P ids, NEW tokens each, multinomial at temperature 1
  matmul N K M        best GFLOP/s of one [N, K] @ [K, M] product
  threads N           torch.set_num_threads(N) for the following commands
Each command answers one JSON line ({"seconds": wall, "cpu_seconds": cpu} or {"gflops": g}); the first line names torch, threads, params.

Usage: python bench/engine-torch.py --threads 2"""

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))  # [B, H, T, C/H]
        if cache is not None:
            if cache:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1)  # [B, H, T, C/H]
        x = x + self.out(y.transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, context: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids: torch.Tensor, start: int = 0, caches: list | None = None) -> torch.Tensor:
        positions = torch.arange(start, start + ids.shape[1])
        x = self.tok(ids) + self.pos(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.head(self.lnf(x))  # [B, T, V]


def matmul_gflops(n: int, k: int, m: int, reps: int = 10) -> float:
    """Best-of-3 GFLOP/s of one [n, k] @ [k, m] float32 product (the engine bench's peak reference)."""
    a, b = torch.randn(n, k), torch.randn(k, m)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            a @ b
        best = min(best, (time.perf_counter() - start) / reps)
    return 2 * n * k * m / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=261)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--context", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = Gpt(args.vocab, args.d_model, args.layers, args.heads, args.context)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def train_step(batch: int, seq_len: int) -> None:
        ids = torch.randint(0, 256, (batch, seq_len))  # [B, T]
        logits = model(ids[:, :-1])  # [B, T-1, V]
        loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    @torch.no_grad()
    def sample(rows: int, prompt_len: int, new_tokens: int) -> None:
        prompts = torch.randint(0, 256, (rows, prompt_len))  # [N, P]
        caches: list = [[] for _ in model.blocks]
        logits = model(prompts, 0, caches)[:, -1]  # [N, V]
        for i in range(new_tokens):
            token = torch.multinomial(torch.softmax(logits, dim=-1), 1)  # [N, 1]
            if i + 1 == new_tokens:
                break
            logits = model(token, prompt_len + i, caches)[:, -1]

    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "params": params}), flush=True)
    for line in sys.stdin:
        command, *numbers = line.split()
        sizes = [int(n) for n in numbers]
        if command == "threads":
            torch.set_num_threads(sizes[0])
            print(json.dumps({"threads": torch.get_num_threads()}), flush=True)
            continue
        if command == "matmul":
            print(json.dumps({"gflops": matmul_gflops(*sizes)}), flush=True)
            continue
        run = {"train": train_step, "sample": sample}[command]
        start, cpu = time.perf_counter(), time.process_time()
        run(*sizes)
        print(json.dumps({"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}), flush=True)


if __name__ == "__main__":
    main()
