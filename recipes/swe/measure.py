"""Measurements of the SWE recipe's sandboxes (figures in README.md).

    python -m recipes.swe.measure sandbox [--n 20]         # median sandbox start, reset and `exec true` times
    python -m recipes.swe.measure watch DIR... > before.json  # digest of watched host paths, leftover sandboxes
    python -m recipes.swe.measure compare before.json after.json
    python -m recipes.swe.measure scripted [--tasks 20] [--pool 4]  # SweAgent, real gateway + controller, a model
                                                                     # that applies each task's reference fix

`watch` records, for each DIR, the SHA-256 of every file (path, size, mode, contents), and the sandbox directories
(`arclight-sandbox-*` in the temp dir) and pids cgroups that exist; `compare` prints what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from arclight_agent.sandbox import load_tasks, open_sandbox

HERE = Path(__file__).resolve().parent


def sandbox_times(n: int) -> dict[str, float]:
    """Median seconds of opening a sandbox on a shipped task (copy, snapshot commit), `reset()`, and `exec('true')`."""
    task = load_tasks(HERE / "data" / "val.jsonl", limit=1)[0]
    starts, resets, execs = [], [], []
    for _ in range(n):
        started = time.monotonic()
        box = open_sandbox(task)
        starts.append(time.monotonic() - started)
        with box:
            box.exec("echo changed > README.md")
            started = time.monotonic()
            box.reset()
            resets.append(time.monotonic() - started)
            execs.append(box.exec("true").seconds)
    return {"n": n, "start_median_s": round(statistics.median(starts), 3), "reset_median_s": round(statistics.median(resets), 3),
            "exec_true_median_s": round(statistics.median(execs), 3)}


def scripted_run(count: int, pool: int) -> dict[str, object]:
    """`SweAgent` on `count` val tasks through a real gateway and controller (child processes of this checkout's
    CLI, `ARCLIGHT_CLI` or dist/), with a scripted model that applies the reference fix with a bash call, runs the
    tests and submits: the harness's own throughput, without a model's time."""
    from arclight_agent.testing import Controller, Gateway
    from recipes.testing.scripted_model import Answer, ScriptedModel, tool_results

    repo = HERE.parents[1]
    os.environ.setdefault("ARCLIGHT_CLI", f"node {repo / 'dist' / 'cli' / 'main.js'}")
    # The model tells tasks apart by their problem statements: take tasks whose statements differ.
    distinct: dict[str, object] = {}
    for task in load_tasks(HERE / "data" / "val.jsonl") + load_tasks(HERE / "data" / "train.jsonl"):
        distinct.setdefault(task.problem_statement, task)
    tasks = list(distinct.values())[:count]
    fixes = {t.problem_statement: t.reference_patch for t in tasks}

    def policy(body: dict) -> Answer:
        problem = next(m["content"] for m in body["messages"] if m["role"] == "user")
        script = [f"git apply - <<'ARCLIGHT_EOF'\n{fixes[problem]}ARCLIGHT_EOF", "python3 -m pytest -q"]
        done = tool_results(body)
        return Answer(tool_calls=[("bash", {"command": script[len(done)]})] if len(done) < 2 else [("submit", {})])

    model, gateway = ScriptedModel(policy), Gateway.start(cwd=str(repo))
    state = tempfile.mkdtemp(prefix="swe-measure-")
    try:
        gateway.ok("POST", "/api/models", [{"model": "policy", "endpoint": model.url}])
        env = {**os.environ, "PYTHONPATH": f"{repo / 'sdk' / 'python'}:{repo}", "PYTHONDONTWRITEBYTECODE": "1"}
        started = time.monotonic()
        created = gateway.ok("POST", "/api/rollouts", [{"input": t.to_row()} for t in tasks])
        controller = Controller.start(gateway, state, cwd=str(repo), env=env, python=sys.executable,
                                      pool_size=str(pool), local={"agent_class": "recipes.swe.agent:SweAgent"})
        try:
            done = gateway.wait_terminal([r["rollout_id"] for r in created], timeout_s=1800)
        finally:
            controller.stop()
        seconds = time.monotonic() - started
        rewards = [e["data"]["value"] for r in done for e in gateway.events(r["rollout_id"], "reward")]
        results = [e["data"] for r in done for e in gateway.events(r["rollout_id"], "swe_result")]
        failed = [r["rollout_id"] for r in done if r["status"]["state"] != "succeeded"]
        if failed:
            print(json.dumps(gateway.events(failed[0], "log"))[-3000:], file=sys.stderr)
    finally:
        gateway.stop()
        model.close()
        shutil.rmtree(state, ignore_errors=True)
    return {"rollouts": len(done), "seconds": round(seconds, 1), "rollouts_per_s": round(len(done) / seconds, 3),
            "succeeded": sum(r["status"]["state"] == "succeeded" for r in done), "mean_reward": statistics.mean(rewards or [0.0]),
            "sandbox_start_median_s": statistics.median([r["sandbox_start_seconds"] for r in results] or [0.0]),
            "rollout_median_s": statistics.median([r["seconds"] for r in results] or [0.0])}


def digest(paths: list[str]) -> dict[str, object]:
    files: dict[str, str] = {}
    for root in paths:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    stat = os.lstat(path)
                    content = os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
                except OSError:
                    continue
                files[path] = f"{stat.st_size}:{stat.st_mode:o}:{hashlib.sha256(content).hexdigest()}"
    cgroups = Path("/sys/fs/cgroup/pids")
    return {"files": files,
            "sandbox_dirs": sorted(str(p) for p in Path(tempfile.gettempdir()).glob("arclight-sandbox-*")),
            "cgroups": sorted(p.name for p in cgroups.glob("arclight-*")) if cgroups.exists() else []}


def compare(before: dict, after: dict) -> dict[str, object]:
    old, new = before["files"], after["files"]
    return {"files_watched": len(old), "added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)),
            "changed": sorted(p for p in set(old) & set(new) if old[p] != new[p]),
            "sandbox_dirs_left": sorted(set(after["sandbox_dirs"]) - set(before["sandbox_dirs"])),
            "cgroups_left": sorted(set(after["cgroups"]) - set(before["cgroups"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("sandbox").add_argument("--n", type=int, default=20)
    sub.add_parser("watch").add_argument("paths", nargs="+")
    scripted = sub.add_parser("scripted")
    scripted.add_argument("--tasks", type=int, default=20)
    scripted.add_argument("--pool", type=int, default=4)
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "sandbox":
        result: object = sandbox_times(args.n)
    elif args.command == "scripted":
        result = scripted_run(args.tasks, args.pool)
    elif args.command == "watch":
        result = digest(args.paths)
    else:
        result = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    json.dump(result, sys.stdout, indent=None if args.command == "watch" else 1)
    print()


if __name__ == "__main__":
    main()
