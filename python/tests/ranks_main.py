"""Run under torchrun by test_ranks.py: the same steps as the test's one-rank workers, on every rank of a larger
world, and a load of the Hugging Face folder OUT/folder; rank 0 saves what the test compares (`results.pt`) and
checkpoints under OUT."""

import sys
from pathlib import Path

import torch

from arclight_torch.model import load_policy
from conftest import full_weights, tiny_worker
from ranks_cases import PROBE, SCENARIOS, TWO_ADAPTERS, adapter_steps, generation_requests, step


def main(out: Path) -> None:
    results = {}
    for name, settings in SCENARIOS.items():
        worker = tiny_worker(**settings)
        loaded = full_weights(worker.policy.module)  # collective: every rank gathers
        metrics = step(worker, 0)
        weights = full_weights(worker.policy.module)
        results[name] = {"loaded": loaded, "metrics": metrics, "weights": weights, "logprobs": worker.logprobs(PROBE)}
        if name in ("full", "lora"):
            worker.save_checkpoint(str(out / f"checkpoint-{name}"))
        if name == "full":
            results[name]["generated"] = [r.token_ids for r in worker._generate(generation_requests())[1]]
    worker = tiny_worker(lora=TWO_ADAPTERS)
    results["adapters"] = {"metrics": adapter_steps(worker), "weights": full_weights(worker.policy.module)}
    results["adapters"]["logprobs"] = {t: worker.logprobs(PROBE, t) for t in ("a", "b", "base")}
    results["folder"] = full_weights(load_policy(str(out / "folder")).module)
    if torch.distributed.get_rank() == 0:
        torch.save(results, out / "results.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
