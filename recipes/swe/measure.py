"""Measurements of the SWE recipe's sandboxes (figures in README.md).

    python -m recipes.swe.measure sandbox [--n 20]         # median sandbox start, reset and `exec true` times
    python -m recipes.swe.measure watch DIR... > before.json  # digest of watched host paths, leftover sandboxes
    python -m recipes.swe.measure compare before.json after.json

`watch` records, for each DIR, the SHA-256 of every file (path, size, mode, contents), and the sandbox directories
(`arclight-sandbox-*` in the temp dir) and pids cgroups that exist; `compare` prints what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "sandbox":
        result: object = sandbox_times(args.n)
    elif args.command == "watch":
        result = digest(args.paths)
    else:
        result = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    json.dump(result, sys.stdout, indent=None if args.command == "watch" else 1)
    print()


if __name__ == "__main__":
    main()
