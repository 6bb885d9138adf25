"""The local sandbox (bubblewrap) against the host: it cannot read outside its copy or reach the host's network, its
commands die at their time limit with their children, limits bind, and nothing is left after close or a SIGKILL of
its owner. Needs `bwrap` (apt-get install bubblewrap; `.ci/run` installs it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from arclight_agent.sandbox import SandboxError, SandboxLimits, SweTask, load_tasks, open_sandbox, task_from_row

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                reason="bubblewrap is not installed (apt-get install bubblewrap)")

SDK = str(Path(__file__).resolve().parents[1])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README").write_text("demo\n")
    return root


def make_task(repo: Path, **fields) -> SweTask:
    return SweTask(id="demo", problem_statement="p", fail_to_pass=["t"], repo=str(repo), **fields)


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def wait_until(check, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_commands_run_in_the_copy_and_cannot_read_the_host(repo, tmp_path):
    secret = f"secret-{uuid.uuid4().hex}"
    host_marker = tmp_path / "host-marker.txt"
    host_marker.write_text(secret)
    home_marker = Path.home() / f".arclight-sandbox-test-{uuid.uuid4().hex}"
    home_marker.write_text(secret)
    try:
        with open_sandbox(make_task(repo)) as box:
            seen = box.exec(f"id -u; pwd; cat pkg/core.py; cat {host_marker} {home_marker}; ls /work {Path.home()}; "
                            f"grep -rs {secret} /etc /usr/share /tmp /testbed; echo done")
            assert seen.stdout.splitlines()[:2] == ["1000", "/testbed"]
            assert "return a + b" in seen.stdout and seen.stdout.rstrip().endswith("done")
            assert secret not in seen.stdout + seen.stderr
            assert "No such file" in seen.stderr
            # Writes land in the copy only.
            box.exec("echo changed > pkg/core.py; touch new.txt")
            assert box.read_file("pkg/core.py") == b"changed\n" and (repo / "pkg" / "core.py").read_text().startswith("def")
            assert not (repo / "new.txt").exists()
    finally:
        home_marker.unlink()


def test_file_access_stays_inside_the_workdir(repo):
    with open_sandbox(make_task(repo)) as box:
        box.write_file("a/b.txt", b"x")
        assert box.exec("cat a/b.txt").stdout == "x" and box.read_file("/testbed/a/b.txt") == b"x"
        box.exec("ln -s /etc/passwd link; ln -s .. up")
        for bad in ("../outside", "/etc/passwd", "link", "up/escape"):
            with pytest.raises(SandboxError, match="working directory"):
                box.read_file(bad)
        with pytest.raises(SandboxError):
            box.write_file("up/escape", b"x")
        with pytest.raises(FileNotFoundError):
            box.read_file("missing.txt")


def test_no_network_unless_allowed(repo):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=3); print(\"connected\")'"
    try:
        with open_sandbox(make_task(repo)) as box:
            blocked = box.exec(connect)
            assert blocked.exit_code != 0 and "connected" not in blocked.stdout
            assert "Connection refused" in blocked.stderr
        with open_sandbox(make_task(repo), limits=SandboxLimits(network=True)) as box:
            assert box.exec(connect).stdout.strip() == "connected"
    finally:
        listener.close()


def test_a_command_past_its_time_limit_dies_with_its_children(repo):
    marker = f"{30 + uuid.uuid4().int % 1000 / 1000:.3f}"  # a unique `sleep` argument to find on the host
    with open_sandbox(make_task(repo)) as box:
        ran = box.exec(f"sleep {marker} & (setsid nohup sleep {marker} >/dev/null 2>&1 &); sleep {marker}", timeout=1.5)
        assert ran.timed_out and ran.exit_code == -signal.SIGKILL and ran.seconds < 10
        assert wait_until(lambda: not processes_with(f"sleep\0{marker}"), 5), processes_with(f"sleep\0{marker}")
        assert box.exec("echo alive").stdout == "alive\n"  # the sandbox stays usable


def test_limits_bind(repo):
    with open_sandbox(make_task(repo), limits=SandboxLimits(pids=24, memory_mb=256, cpu_seconds=1)) as box:
        forks = box.exec("for i in $(seq 60); do sleep 1 & done 2>&1; wait", timeout=30)
        assert "Resource temporarily unavailable" in forks.stdout + forks.stderr
        memory = box.exec("python3 -c 'x = bytearray(600 * 1024 * 1024)'")
        assert memory.exit_code != 0 and "MemoryError" in memory.stderr
        spin = box.exec("python3 -c 'while True: pass'", timeout=30)
        assert not spin.timed_out and spin.exit_code != 0 and spin.seconds < 20  # SIGXCPU after 1 s of CPU
        # tmpfs pages are not in RLIMIT_AS: /tmp and /dev/shm are capped at memory_mb, the root and /dev read-only
        for path in ("/tmp/fill", "/dev/shm/fill"):
            fill = box.exec(f"head -c 300M /dev/zero > {path}")
            assert fill.exit_code != 0 and "No space left on device" in fill.stderr, fill
        for path in ("/fill", "/etc/fill", "/dev/fill"):
            assert "Read-only file system" in box.exec(f"touch {path}").stderr


def test_reset_returns_to_the_snapshot_and_close_removes_everything(repo):
    patch = "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n"
    box = open_sandbox(make_task(repo, start_patch=patch, setup="echo built > built.txt"))
    root = box.root
    assert box.read_file("pkg/core.py").endswith(b"return a - b\n") and box.read_file("built.txt") == b"built\n"
    # The start patch is not in the history: one commit, the snapshot itself.
    assert box.exec("git log --oneline | wc -l").stdout.strip() == "1" and box.exec("git status --short").stdout == ""
    box.exec("rm -rf pkg .git; echo x > other.txt; mkdir ro; chmod 0 ro")
    box.reset()
    assert box.read_file("pkg/core.py").endswith(b"return a - b\n") and box.exec("git status --short").stdout == ""
    box.close()
    box.close()
    assert not root.exists()
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")


def test_base_commit_is_checked_out_and_later_commits_are_unreachable(repo, tmp_path):
    """A clone holds the fix in later commits: none of them may be reachable from the sandbox."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (repo / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b  # the fix\n")
    git("commit", "-qam", "the fix")
    fix = git("rev-parse", "HEAD")
    git("tag", "fixed")
    git("branch", "later")
    git("checkout", "-q", base)  # ORIG_HEAD, reflog entries and a detached HEAD that once pointed at the fix
    git("clone", "-q", "--no-local", str(repo), str(tmp_path / "clone"))  # origin/HEAD is a symref
    cases = [(repo, base), (tmp_path / "clone", base)]
    git("checkout", "-q", "-b", "work", base)
    cases.append((repo, None))  # no base_commit: HEAD (a branch) is the snapshot; other branches and tags go
    for source, commit in cases:
        with open_sandbox(make_task(source, base_commit=commit)) as box:
            assert b"the fix" not in box.read_file("pkg/core.py")
            seen = box.exec(f"git log --all --format=%s; git reflog; git fsck --unreachable --no-reflogs; "
                            f"git cat-file -e {fix} 2>/dev/null || echo fix-object-gone")
            assert "base" in seen.stdout and "the fix" not in seen.stdout and fix not in seen.stdout, seen
            assert seen.stdout.endswith("fix-object-gone\n"), seen


def test_a_sigkilled_owner_leaves_nothing_behind(repo, tmp_path):
    marker = f"{40 + uuid.uuid4().int % 1000 / 1000:.3f}"
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, threading
        from arclight_agent.sandbox import SweTask, open_sandbox
        box = open_sandbox(SweTask(id="k", problem_statement="p", fail_to_pass=["t"], repo={str(repo)!r}))
        threading.Thread(target=box.exec, args=("sleep {marker}",), daemon=True).start()
        print(box.root, flush=True)
        threading.Event().wait()
    """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SDK})
    root = Path(owner.stdout.readline().strip())
    assert root.exists()
    assert wait_until(lambda: processes_with(f"sleep\0{marker}") != [])
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert wait_until(lambda: not root.exists()), f"{root} was left behind"
    assert wait_until(lambda: not processes_with(f"sleep\0{marker}")), "a sandbox process outlived its owner"
    assert not Path("/sys/fs/cgroup/pids", f"arclight-{root.name}").exists()


def test_fails_closed(repo, tmp_path):
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        open_sandbox(make_task(repo), bwrap="no-such-bwrap")
    with pytest.raises(SandboxError, match="cannot isolate"):
        open_sandbox(make_task(repo), bwrap="false", root_dir=str(tmp_path))  # a bwrap that cannot make namespaces
    assert list(tmp_path.glob("arclight-sandbox-*")) == []
    with pytest.raises(SandboxError, match="preparing the snapshot failed"):
        open_sandbox(make_task(repo, setup="exit 3"), root_dir=str(tmp_path))
    assert list(tmp_path.glob("arclight-sandbox-*")) == []
    for bad in (dict(pids=-1), dict(memory_mb=0), dict(pids=2.5), dict(cpu_seconds="1")):
        with pytest.raises(ValueError, match=f"SandboxLimits.{next(iter(bad))} must be"):
            SandboxLimits(**bad)
    if os.geteuid() == 0:  # the pids cgroup refuses the value: neither the directory nor the cgroup stays
        before = {p.name for p in Path("/sys/fs/cgroup/pids").glob("arclight-*")}
        with pytest.raises(SandboxError, match="cannot set the pids limit"):
            open_sandbox(make_task(repo), limits=SandboxLimits(pids=2**70), root_dir=str(tmp_path))
        assert list(tmp_path.glob("arclight-sandbox-*")) == []
        assert {p.name for p in Path("/sys/fs/cgroup/pids").glob("arclight-*")} <= before
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    with pytest.raises(SandboxError, match="'deadbeef' did not match"):
        open_sandbox(make_task(repo, base_commit="deadbeef"), root_dir=str(tmp_path))
    assert list(tmp_path.glob("arclight-sandbox-*")) == []
    if not (Path(SDK) / "arclight_agent" / "sandbox" / "kubernetes.py").exists():
        with pytest.raises(SandboxError, match="kubernetes sandbox backend is not installed"):
            open_sandbox(make_task(repo), backend="kubernetes")
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        open_sandbox(make_task(repo), backend="docker")


def test_task_rows_round_trip_and_bad_rows_are_named(tmp_path, repo):
    task = make_task(repo, pass_to_pass=["p1"], test_files=["tests/test_a.py"])
    (tmp_path / "tasks.jsonl").write_text(__import__("json").dumps({**task.to_row(), "repo": "repo"}) + "\n\n")
    [loaded] = load_tasks(tmp_path / "tasks.jsonl")
    assert loaded == task
    assert "'p1'" not in task.test_run_command() and task.test_run_command().endswith(" t p1")
    for row, why in [({"id": "x", "problem_statement": "p"}, "task x needs fail_to_pass"),
                     ({"problem_statement": "p"}, "a task row needs id, fail_to_pass"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": []}, "needs a repo directory or an image"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "image": "i", "test_command": "pytest"},
                      "no {tests} placeholder"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": "t", "image": "i"}, "must be a list"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "image": "i",
                       "timeout_seconds": "abc"}, 'timeout_seconds must be a positive number of seconds, got "abc"'),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "image": "i",
                       "test_timeout_seconds": 0}, "test_timeout_seconds must be a positive number"),
                     ({"id": "x", "problem_statement": 3, "fail_to_pass": ["t"], "image": "i"},
                      "problem_statement must be a string, got 3"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "repo": ["r"]},
                      "repo must be a string"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "image": "i", "workdir": "testbed"},
                      "workdir must be an absolute path"),
                     ({"id": "x", "problem_statement": "p", "fail_to_pass": ["t"], "image": "i", "metadata": []},
                      "metadata must be a JSON object"),
                     ([1, 2], "a task row is a JSON object, got list")]:
        with pytest.raises(ValueError, match=why):
            task_from_row(row)
    (tmp_path / "bad.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_tasks(tmp_path / "bad.jsonl")
