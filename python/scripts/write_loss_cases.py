"""Writes test/fixtures/loss-cases.json: per-token loss cases whose expected values are worked out by hand below
(closed forms in plain `math`, no tensor code), read by both the TS embedded loss test and the Python loss test.
Usage: python scripts/write_loss_cases.py"""

import json
from math import exp, log
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "test" / "fixtures" / "loss-cases.json"


def k3(d: float) -> float:
    """k3 for log-ratio d = log q - log p."""
    return exp(d) - d - 1


def cases() -> list[dict]:
    old = [-1.0, -1.0, -1.0, -1.0]
    r1 = [1.1, 1.5, 0.5, 2.0]
    ppo = {
        "name": "ppo token-mean: ratio inside, above and below the clip range, one masked-out token",
        "why": "r=1.1,A=1: max(-1.1,-1.1)=-1.1; r=1.5: max(-1.5,-1.2)=-1.2 (clipped); r=0.5: max(-0.5,-0.8)=-0.5; "
        "token 3 masked. loss=(-1.1-1.2-0.5)/3. dl/dlp=-A r/3 where unclipped, 0 where clipped or masked.",
        "loss": {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.2, "kl_coef": 0, "aggregation": "token-mean"},
        "tokens": {
            "logprobs": [o + log(r) for o, r in zip(old, r1)],
            "old_logprobs": old,
            "advantages": [1, 1, 1, 5],
            "mask": [1, 1, 1, 0],
            "weights": [1, 1, 1, 1],
        },
        "expected": {
            "loss": (-1.1 - 1.2 - 0.5) / 3,
            "clipped_tokens": 1,
            "approx_kl_sum": sum(k3(-log(r)) for r in r1[:3]),
            "grad_logprobs": [-1.1 / 3, 0, -0.5 / 3, 0],
        },
    }
    r2 = [1.5, 4.0, 1.4, 0.7]
    dual = {
        "name": "ppo asymmetric clip (0.2/0.28) with dual clip 3 on negative advantages",
        "why": "r=1.5,A=-1: max(1.5,1.28)=1.5, min(1.5,3)=1.5; r=4,A=-1: max(4,1.28)=4 -> dual min(4,3)=3; "
        "r=1.4,A=2: max(-2.8,-2.56)=-2.56 (clipped); r=0.7,A=-1: max(0.7,0.8)=0.8 (clipped). loss=(1.5+3-2.56+0.8)/4. "
        "Only token 0 follows r: dl/dlp=-A r/4=1.5/4.",
        "loss": {
            "kind": "ppo",
            "clip_low": 0.2,
            "clip_high": 0.28,
            "dual_clip": 3,
            "kl_coef": 0,
            "aggregation": "token-mean",
        },
        "tokens": {
            "logprobs": [-2 + log(r) for r in r2],
            "old_logprobs": [-2.0] * 4,
            "advantages": [-1, -1, 2, -1],
            "mask": [1, 1, 1, 1],
            "weights": [1, 1, 1, 1],
        },
        "expected": {
            "loss": (1.5 + 3 - 2.56 + 0.8) / 4,
            "clipped_tokens": 2,
            "approx_kl_sum": sum(k3(-log(r)) for r in r2),
            "grad_logprobs": [1.5 / 4, 0, 0, 0],
        },
    }
    lp = [-1.0, -2.0, -0.5, -1.5]
    d = [0.0, log(2), -log(2), log(3)]
    adv, isw, w, beta = [1, -1, 2, 0], [1, 0.5, 2, 1], [0.5, 0.5, 0.25, 0.25], 0.1
    per = [-a * i + beta * k3(dd) for a, i, dd in zip(adv, isw, d)]
    kl = {
        "name": "ppo weighted aggregation with k3 KL (0.1) and truncated IS weights, on-policy ratio 1",
        "why": "r=1 so l=-A*is + 0.1*k3(ref-lp), k3(d)=e^d-d-1 with d=0,ln2,-ln2,ln3; loss=sum(w l)/sum(w), "
        "sum(w)=1.5. dl/dlp=w/1.5*(-A*is + 0.1*(1-e^d)).",
        "loss": {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.2, "kl_coef": beta, "aggregation": "weighted"},
        "tokens": {
            "logprobs": lp,
            "old_logprobs": lp,
            "ref_logprobs": [x + dd for x, dd in zip(lp, d)],
            "is_weights": isw,
            "advantages": adv,
            "mask": [1, 1, 1, 1],
            "weights": w,
        },
        "expected": {
            "loss": sum(wi * p for wi, p in zip(w, per)) / 1.5,
            "clipped_tokens": 0,
            "approx_kl_sum": 0,
            "grad_logprobs": [
                wi / 1.5 * (-a * i + beta * (1 - exp(dd))) for wi, a, i, dd in zip(w, adv, isw, d)
            ],
        },
    }
    sft = {
        "name": "sft weighted: mean of -logprob over masked tokens, each token weighted by its row's weight",
        "why": "(1*2 + 1*1 + 3*3)/(1+1+3) = 12/5; token 2 masked. dl/dlp = -w/5.",
        "loss": {"kind": "sft", "aggregation": "weighted"},
        "tokens": {
            "logprobs": [-2, -1, -0.5, -3],
            "advantages": [0, 0, 0, 0],
            "mask": [1, 1, 0, 1],
            "weights": [1, 1, 1, 3],
        },
        "expected": {"loss": 12 / 5, "clipped_tokens": 0, "approx_kl_sum": 0, "grad_logprobs": [-0.2, -0.2, 0, -0.6]},
    }
    on_policy = {
        "name": "ppo without old logprobs: ratio 1 with the current policy's gradient",
        "why": "l=-A: (-0.5+1.5)/2=0.5; dl/dlp=-A/2.",
        "loss": {"kind": "ppo", "clip_low": 0.2, "clip_high": 0.2, "kl_coef": 0, "aggregation": "token-mean"},
        "tokens": {"logprobs": [-0.7, -1.3], "advantages": [0.5, -1.5], "mask": [1, 1], "weights": [1, 1]},
        "expected": {"loss": 0.5, "clipped_tokens": 0, "approx_kl_sum": 0, "grad_logprobs": [-0.25, 0.75]},
    }
    return [ppo, dual, kl, sft, on_policy, *objective_cases()]


def objective_cases() -> list[dict]:
    """GSPO (arXiv:2507.18071), CISPO (arXiv:2506.13585) and Dr. GRPO's constant normaliser (arXiv:2503.20783)."""
    # GSPO: two rows of width 3. Row 0 (mask 1,1,0) has log ratios ln1.1 +- 0.1, so s = exp(mean) = 1.1; row 1 has
    # ln1.5 + (0.2, -0.3, 0.1), s = 1.5.
    d0 = [log(1.1) + 0.1, log(1.1) - 0.1, 0.0]
    d1 = [log(1.5) + 0.2, log(1.5) - 0.3, log(1.5) + 0.1]
    old = [-1.0, -1.5, -2.0, -1.0, -1.5, -2.0]
    d = d0 + d1
    gspo = {
        "name": "gspo token-mean: one sequence ratio per row, clipped for the whole row",
        "why": "row 0: s=exp((ln1.1+0.1+ln1.1-0.1)/2)=1.1 inside [0.8,1.2], A=1: l=-1.1 on its 2 masked tokens; "
        "row 1: s=1.5, A=2: max(-3,-2.4)=-2.4 (clipped) on 3 tokens. loss=(2*-1.1+3*-2.4)/5. "
        "d s_t/d lp_t = s (GSPO-token form), so dl/dlp=-A s/5=-0.22 on row 0's masked tokens, 0 on row 1 (clipped).",
        "loss": {
            "kind": "ppo",
            "objective": "gspo",
            "clip_low": 0.2,
            "clip_high": 0.2,
            "kl_coef": 0,
            "aggregation": "token-mean",
        },
        "tokens": {
            "logprobs": [o + dd for o, dd in zip(old, d)],
            "old_logprobs": old,
            "advantages": [1, 1, 0, 2, 2, 2],
            "mask": [1, 1, 0, 1, 1, 1],
            "weights": [1] * 6,
            "row_width": 3,
        },
        "expected": {
            "loss": (2 * -1.1 + 3 * -2.4) / 5,
            "clipped_tokens": 3,
            "approx_kl_sum": sum(k3(-x) for x, m in zip(d, [1, 1, 0, 1, 1, 1]) if m),
            "grad_logprobs": [-0.22, -0.22, 0, 0, 0, 0],
        },
    }
    r = [1.1, 1.5, 0.5, 2.0]
    w = [1.1, 1.28, 0.8, 1.28]
    adv = [1, 1, -1, 2]
    lp = [-1 + log(x) for x in r]
    cispo = {
        "name": "cispo token-mean: clipped ratio as a constant weight on -A*logprob; clipped tokens keep a gradient",
        "why": "w=clip(r,0.8,1.28)=1.1,1.28,0.8 (token 3 masked); l=-w*A*lp; loss=sum/3; dl/dlp=-w*A/3 on every "
        "masked token, also on the two clipped ones (r=1.5 above 1.28, r=0.5 below 0.8).",
        "loss": {
            "kind": "ppo",
            "objective": "cispo",
            "clip_low": 0.2,
            "clip_high": 0.28,
            "kl_coef": 0,
            "aggregation": "token-mean",
        },
        "tokens": {
            "logprobs": lp,
            "old_logprobs": [-1.0] * 4,
            "advantages": adv,
            "mask": [1, 1, 1, 0],
            "weights": [1] * 4,
        },
        "expected": {
            "loss": sum(-wi * a * x for wi, a, x in zip(w[:3], adv[:3], lp[:3])) / 3,
            "clipped_tokens": 2,
            "approx_kl_sum": sum(k3(-log(x)) for x in r[:3]),
            "grad_logprobs": [-1.1 / 3, -1.28 / 3, 0.8 / 3, 0],
        },
    }
    constant = {
        "name": "ppo constant aggregation (Dr. GRPO): token sum over a fixed normaliser, not the token count",
        "why": "on-policy, l=-A: (-0.5+1.5)/10=0.1 with normalizer 10 (token 2 masked); dl/dlp=-A/10.",
        "loss": {
            "kind": "ppo",
            "clip_low": 0.2,
            "clip_high": 0.2,
            "kl_coef": 0,
            "aggregation": "constant",
            "normalizer": 10,
        },
        "tokens": {"logprobs": [-0.7, -1.3, -0.2], "advantages": [0.5, -1.5, 1], "mask": [1, 1, 0], "weights": [1] * 3},
        "expected": {"loss": 0.1, "clipped_tokens": 0, "approx_kl_sum": 0, "grad_logprobs": [-0.05, 0.15, 0]},
    }
    return [gspo, cispo, constant]


if __name__ == "__main__":
    doc = {
        "description": "Per-token loss cases with hand-worked expected values (see scripts/write_loss_cases.py). "
        "Each case is one micro-batch whose denominator is sum(mask*weights) (aggregation constant: normalizer), "
        "its tokens one row unless row_width splits them into rows; the TS embedded loss "
        "(src/engine/embedded/loss-fixture.test.ts) and the Python loss (python/tests/test_loss.py) both match it.",
        "cases": cases(),
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {OUT}")
