"""The local sandbox backend: bubblewrap (`bwrap`) namespaces around a throw-away copy of the task's repository.

Every `exec` starts `bwrap ... bash -lc CMD` with new user, pid, mount, IPC, UTS (and, unless `limits.network`,
network) namespaces. The new root holds read-only host `/usr` (and the `/bin`, `/lib*` links), the few `/etc` files
a shell and Python need, a private `/proc`, `/dev` and `/tmp`, and the copy at the task's workdir: no home, no other
host path. Commands run as uid 1000 with no capabilities. The copy, its pristine twin for `reset()` and the cgroup
live under one directory per sandbox, removed by `close()`, by a finalizer at garbage collection or interpreter exit,
and by a watchdog process when the owner dies without either (SIGKILL); `--die-with-parent` ends the commands then.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

from . import _watchdog
from .base import ExecResult, Sandbox, SandboxError, SandboxLimits, snapshot_script
from .task import SweTask

ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "profile", "profile.d", "bash.bashrc",
             "localtime", "timezone", "mime.types", "nsswitch.conf", "inputrc")
NETWORK_ETC_FILES = ("resolv.conf", "hosts", "ssl", "ca-certificates", "ca-certificates.conf", "gai.conf")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "USER": "agent", "LANG": "C.UTF-8", "TERM": "dumb",
       "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@sandbox", "GIT_COMMITTER_NAME": "agent",
       "GIT_COMMITTER_EMAIL": "agent@sandbox", "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_INPUT": "1"}
PIDS_CGROUP_V1 = Path("/sys/fs/cgroup/pids")


def _pipe_reader(stream, cap: int, out: list[bytes]) -> None:
    """Keeps the first `cap` bytes of a stream and drains the rest, so a chatty command never blocks or floods."""
    kept = 0
    while chunk := stream.read(65536):
        if kept < cap:
            out.append(chunk[: cap - kept])
            kept += len(out[-1])
    stream.close()


class LocalSandbox(Sandbox):
    """A bubblewrap sandbox; see the module doc.

    :param limits: resource limits of each command
    :param root_dir: where the per-sandbox directory is made (default `$ARCLIGHT_SANDBOX_DIR`, else the temp dir)
    :param max_output_bytes: stdout and stderr of one command are each cut to this many bytes
    :raises SandboxError: no `bwrap`, namespaces that cannot be made, a repo that is not a directory, a failed setup
    """

    def __init__(self, task: SweTask, limits: SandboxLimits | None = None, root_dir: str | None = None,
                 max_output_bytes: int = 1_000_000, bwrap: str = "bwrap") -> None:
        self.task, self.limits, self.max_output_bytes = task, limits or SandboxLimits(), max_output_bytes
        self.closed = False
        self.bwrap = shutil.which(bwrap)
        if self.bwrap is None:
            raise SandboxError("the local sandbox needs bubblewrap (bwrap): apt-get install bubblewrap")
        if not task.repo or not Path(task.repo).is_dir():
            raise SandboxError(f"task {task.id}: the local sandbox needs a repo directory, got {task.repo!r}")
        parent = root_dir or os.environ.get("ARCLIGHT_SANDBOX_DIR") or None
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="arclight-sandbox-", dir=parent)))
        self.work, self.pristine = self.root / "work", self.root / "pristine"
        try:
            self.cgroup = self._make_cgroup()
        except BaseException:
            _watchdog.remove_tree(str(self.root))
            raise
        watchdog = subprocess.Popen([sys.executable, "-I", _watchdog.__file__, str(self.root), str(self.cgroup or "")],
                                    stdin=subprocess.PIPE, start_new_session=True)
        self._finalizer = weakref.finalize(self, _cleanup, self.root, self.cgroup, watchdog)
        try:
            self._write_etc()
            self.work.mkdir()
            probe = self.exec("true", timeout=30)
            if probe.exit_code != 0:
                raise SandboxError(f"bubblewrap cannot isolate here (user/pid/mount/net namespaces, or {self.limits} "
                                   f"too tight to start): {probe.stderr.strip()}")
            self._prepare()
        except BaseException:
            self.close()
            raise

    # -- setup ---------------------------------------------------------------------------------------------------

    def _make_cgroup(self) -> Path | None:
        """A pids cgroup for `limits.pids` when running as root (RLIMIT_NPROC does not bind root); else None.

        :raises SandboxError: root without a writable cgroup v1 pids hierarchy (the limit could not be enforced)
        """
        if self.limits.pids is None or os.geteuid() != 0:
            return None
        if not os.access(PIDS_CGROUP_V1, os.W_OK):
            raise SandboxError("as root, limits.pids needs the cgroup v1 pids controller at /sys/fs/cgroup/pids "
                               "(RLIMIT_NPROC does not bind root); pass SandboxLimits(pids=None) to run without it")
        path = PIDS_CGROUP_V1 / f"arclight-{self.root.name}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(self.limits.pids))
        except OSError as err:
            path.rmdir()
            raise SandboxError(f"cannot set the pids limit {self.limits.pids} in {path}: {err}") from err
        return path

    def _write_etc(self) -> None:
        etc = self.root / "etc"
        etc.mkdir()
        (etc / "passwd").write_text("root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:1000:1000:agent:/tmp:/bin/bash\n"
                                    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
        (etc / "group").write_text("root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n")
        (etc / "hostname").write_text("sandbox\n")

    def _prepare(self) -> None:
        """Copies the repo, checks out `base_commit`, applies `start_patch`, runs `setup`, commits the snapshot.

        Commits the snapshot does not descend from are removed. With a start patch the whole history is dropped (a
        fresh one-commit repository), so `git log -p` cannot show it.
        """
        task = self.task
        shutil.copytree(task.repo, self.work, symlinks=True, dirs_exist_ok=True)
        if task.start_patch:
            (self.root / "start.patch").write_text(task.start_patch)
            self.write_file(".arclight-start.patch", task.start_patch.encode())
        script = snapshot_script(task.base_commit, bool(task.start_patch), task.setup)
        done = self.exec(script, timeout=task.test_timeout_seconds)
        if done.exit_code != 0:
            raise SandboxError(f"task {task.id}: preparing the snapshot failed (exit {done.exit_code}"
                               f"{', timed out' if done.timed_out else ''}): {(done.stderr or done.stdout)[-2000:]}")
        shutil.copytree(self.work, self.pristine, symlinks=True)

    # -- commands ------------------------------------------------------------------------------------------------

    def _argv(self, cmd: str) -> list[str]:
        argv = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--uid", "1000", "--gid", "1000", "--hostname", "sandbox"]
        argv.append("--share-net" if self.limits.network else "--unshare-net")
        argv += ["--ro-bind", "/usr", "/usr"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/", name)
            if host.is_symlink():
                argv += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                argv += ["--ro-bind", str(host), f"/{name}"]
        for name in ETC_FILES + (NETWORK_ETC_FILES if self.limits.network else ()):
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        for name in ("passwd", "group", "hostname"):
            argv += ["--ro-bind", str(self.root / "etc" / name), f"/etc/{name}"]
        # bwrap's root, /dev and /tmp are tmpfs, whose pages RLIMIT_AS does not count: the root and /dev become
        # read-only, and /tmp and /dev/shm are capped at memory_mb each when it is set.
        size = [] if self.limits.memory_mb is None else ["--size", str(self.limits.memory_mb * 1024 * 1024)]
        argv += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp",
                 "--bind", str(self.work), self.task.workdir, "--remount-ro", "/dev", "--remount-ro", "/",
                 "--chdir", self.task.workdir, "bash", "-lc", cmd]
        return argv

    def _limit_child(self) -> None:
        """Runs in the child before bwrap starts: rlimits (inherited by every process of the command) and the cgroup."""
        limits = self.limits
        if limits.cpu_seconds is not None:
            seconds = max(1, int(limits.cpu_seconds))
            resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
        if limits.memory_mb is not None:
            size = limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        if limits.pids is not None and self.cgroup is None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.pids, limits.pids))
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        started = time.monotonic()
        try:
            process = subprocess.Popen(self._argv(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=ENV, start_new_session=True,
                                       preexec_fn=self._limit_child)
        except (OSError, subprocess.SubprocessError) as err:
            raise SandboxError(f"cannot start bubblewrap: {err}") from err
        out: list[bytes] = []
        err_out: list[bytes] = []
        readers = [threading.Thread(target=_pipe_reader, args=(process.stdout, self.max_output_bytes, out), daemon=True),
                   threading.Thread(target=_pipe_reader, args=(process.stderr, self.max_output_bytes, err_out), daemon=True)]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGKILL to bwrap's group: its pid-1 child dies with it (--die-with-parent), and the kernel kills the rest
            # of the pid namespace, including processes that left the session.
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for reader in readers:
            reader.join(timeout=5)
        return ExecResult(exit_code=process.returncode, stdout=b"".join(out).decode(errors="replace"),
                          stderr=b"".join(err_out).decode(errors="replace"), timed_out=timed_out,
                          seconds=time.monotonic() - started)

    # -- files ---------------------------------------------------------------------------------------------------

    def _host_path(self, path: str) -> Path:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        relative = Path(path)
        if relative.is_absolute():
            try:
                relative = relative.relative_to(self.task.workdir)
            except ValueError:
                raise SandboxError(f"{path}: outside the working directory {self.task.workdir}") from None
        # Resolve symlinks the sandbox made: a link to /etc/shadow must not be read on the host's side.
        resolved = os.path.realpath(self.work / relative)
        if resolved != str(self.work) and not resolved.startswith(str(self.work) + os.sep):
            raise SandboxError(f"{path}: leaves the working directory")
        return Path(resolved)

    def read_file(self, path: str) -> bytes:
        return self._host_path(path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        target = self._host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def reset(self) -> None:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        _watchdog.remove_tree(str(self.work))
        shutil.copytree(self.pristine, self.work, symlinks=True)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._finalizer()


def _cleanup(root: Path, cgroup: Path | None, watchdog: subprocess.Popen) -> None:
    """Removes the sandbox's directory and cgroup, then lets the watchdog go (it finds nothing left)."""
    _watchdog.remove_tree(str(root))
    if cgroup is not None:
        _watchdog.remove_cgroup(str(cgroup))
    try:
        watchdog.stdin.close()
        watchdog.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        pass


