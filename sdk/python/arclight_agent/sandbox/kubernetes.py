"""The Kubernetes sandbox backend: one pod per sandbox, from the task's image, commands run through the API server.

The pod runs `sleep infinity` in the image with the task's working directory; `exec` is `kubectl exec` (the API
server's `pods/exec`, streamed by the kubelet) of `timeout -s KILL T bash -lc CMD` in that directory. Nothing but
`kubectl` is needed on the caller's side (the official `kubernetes` client is not required).

What is enforced, and by whom:

- **memory** (`limits.memory_mb`): the container's memory limit (`resources.limits.memory`, the kubelet's cgroup):
  the sandbox as a whole, not per process; going past it gets the biggest process OOM-killed (exit 137).
- **CPU time** (`limits.cpu_seconds`): `ulimit -t` (RLIMIT_CPU) of every command, per process, as the local backend.
  `cpu` (cores) sets the container's CPU limit.
- **time**: `timeout -s KILL` kills the command's process group at its limit (`exit_code` -9, `timed_out`); the pod's
  `activeDeadlineSeconds` (`max_lifetime_seconds`) ends the whole pod if nobody closes it.
- **processes** (`limits.pids`): Kubernetes 1.20 has no per-pod setting; the node's kubelet enforces its
  `podPidsLimit` for every pod. The sandbox sets nothing and does not check it.
- **network** (`limits.network` False): a NetworkPolicy that denies all ingress and egress of the pod (enforced by a
  CNI plugin that implements NetworkPolicy: Calico, Cilium, …), no service-account token, no service links. Because
  a NetworkPolicy is silently ignored by a CNI that does not implement it, the sandbox then checks from inside the
  pod that it cannot open a TCP connection to any `network_probe` address (default: the API server and the
  `kubernetes` Service) and fails closed (`SandboxError`, pod deleted) if it can.
- **reset**: the pod is deleted and a new one made from the image, then the task's snapshot is prepared again, so no
  process and no file of the previous run survives.
- **cleanup**: `close()` (also on errors in the constructor, at interpreter exit and on garbage collection) deletes
  the pod and its NetworkPolicy with no grace period. A caller killed with SIGKILL leaves the pod until its
  `activeDeadlineSeconds`; every object carries the label `arclight/sandbox` for sweeping.
"""

from __future__ import annotations

import atexit
import json
import posixpath
import secrets
import shlex
import shutil
import subprocess
import time
import weakref
from typing import Any
from urllib.parse import urlparse

from arclight_agent.sandbox import ExecResult, Sandbox, SandboxError, SandboxLimits
from arclight_agent.sandbox.base import snapshot_script

SANDBOX_LABEL = "arclight/sandbox"
MANAGED_BY = {"app.kubernetes.io/managed-by": "arclight"}
CONTAINER = "sandbox"
# `timeout` exits 128+9 when it had to SIGKILL the command.
KILLED_BY_TIMEOUT = 137
# Waiting reasons of a container that will never start on its own.
FATAL_WAITING = {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
                 "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}
ENV = {"HOME": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb", "GIT_AUTHOR_NAME": "agent",
       "GIT_AUTHOR_EMAIL": "agent@sandbox", "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@sandbox",
       "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_INPUT": "1"}


class KubernetesSandbox(Sandbox):
    """A sandbox pod; see the module doc.

    :param task: a `SweTask` (its `image`, `workdir`, `start_patch`, `setup`), or None with `image` and `workdir`
    :param image: the container image (default: the task's)
    :param namespace: where pods are made (the caller needs pods create/get/delete, pods/exec create, and
        networkpolicies create/delete there)
    :param workdir: the working directory in the image (default: the task's, else `/work`)
    :param limits: resource limits (see the module doc for what enforces each)
    :param kubeconfig: a kubeconfig file; or `server` + `token` (+ `ca_file`, else TLS is not verified); or neither:
        kubectl's own default (`KUBECONFIG`, `~/.kube/config`, the pod's service account)
    :param kubectl: the kubectl binary
    :param cpu: the container's CPU limit in cores (None: no limit)
    :param image_pull_policy: `IfNotPresent`, `Always` or `Never`
    :param start_timeout: seconds for the pod to become ready
    :param max_lifetime_seconds: the pod's `activeDeadlineSeconds`
    :param network_probe: `host:port` addresses a network-less sandbox must not reach (None: the API server and the
        `kubernetes` Service)
    :param max_output_bytes: stdout and stderr of one command are each cut to this many bytes
    :raises SandboxError: no kubectl, no image, a pod that does not start, a failed setup, a network that is not
        isolated; the pod is deleted first
    """

    def __init__(self, task: Any = None, *, image: str | None = None, namespace: str = "default",
                 workdir: str | None = None, limits: SandboxLimits | None = None, kubeconfig: str | None = None,
                 server: str | None = None, token: str | None = None, ca_file: str | None = None,
                 kubectl: str = "kubectl", cpu: float | None = None, image_pull_policy: str = "IfNotPresent",
                 start_timeout: float = 300.0, max_lifetime_seconds: int = 24 * 3600,
                 network_probe: list[str] | None = None, max_output_bytes: int = 1_000_000) -> None:
        self.task = task
        self.image = image or getattr(task, "image", None)
        if not self.image:
            raise SandboxError("the kubernetes sandbox needs an image (the task's `image`, or `image=`)")
        self.workdir = workdir or getattr(task, "workdir", None) or "/work"
        self.namespace, self.limits, self.cpu = namespace, limits or SandboxLimits(), cpu
        self.image_pull_policy, self.start_timeout = image_pull_policy, start_timeout
        self.max_lifetime_seconds, self.max_output_bytes = max_lifetime_seconds, max_output_bytes
        kubectl_path = shutil.which(kubectl)
        if kubectl_path is None:
            raise SandboxError(f"no kubectl ({kubectl!r} is not on PATH): the kubernetes sandbox execs through it")
        self._kubectl = [kubectl_path, f"--namespace={namespace}"]
        if kubeconfig:
            self._kubectl.append(f"--kubeconfig={kubeconfig}")
        elif server:
            self._kubectl += [f"--server={server}", f"--token={token or ''}"]
            self._kubectl.append(f"--certificate-authority={ca_file}" if ca_file else "--insecure-skip-tls-verify=true")
        self._server = server
        self._network_probe = network_probe
        # The NetworkPolicy and the pods' label carry the sandbox's id; each pod has a name of its own, since a pod
        # recreated under the old name may still be served by the old pod's container while the kubelet stops it.
        self.sandbox_id = f"arclight-sandbox-{secrets.token_hex(5)}"
        self.name = self.sandbox_id
        self._pod_names = [self.name]
        self.pod_ip: str | None = None
        self.closed = False
        self._finalizer = weakref.finalize(self, _delete_objects, list(self._kubectl), self._pod_names, self.sandbox_id)
        atexit.register(self._finalizer)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- kubectl -------------------------------------------------------------------------------------------------

    def _run(self, args: list[str], input: bytes | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
        try:
            return subprocess.run([*self._kubectl, *args], input=input, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise SandboxError(f"kubectl {args[0]} did not answer in {timeout:.0f} s") from err
        except OSError as err:
            raise SandboxError(f"cannot run kubectl: {err}") from err

    def _checked(self, args: list[str], input: bytes | None = None, timeout: float = 120.0) -> bytes:
        done = self._run(args, input=input, timeout=timeout)
        if done.returncode != 0:
            raise SandboxError(f"kubectl {' '.join(args[:2])}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    # -- the pod -------------------------------------------------------------------------------------------------

    def _pod_manifest(self) -> dict[str, Any]:
        limits: dict[str, str] = {}
        if self.limits.memory_mb is not None:
            limits["memory"] = f"{int(self.limits.memory_mb)}Mi"
        if self.cpu is not None:
            limits["cpu"] = f"{int(self.cpu * 1000)}m"
        container: dict[str, Any] = {
            "name": CONTAINER,
            "image": self.image,
            "imagePullPolicy": self.image_pull_policy,
            "command": ["sleep", "infinity"],
            "workingDir": self.workdir,
            "env": [{"name": k, "value": v} for k, v in ENV.items()],
            "resources": {"limits": limits, "requests": dict(limits)},
            "securityContext": {"allowPrivilegeEscalation": False},
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "labels": {**MANAGED_BY, SANDBOX_LABEL: self.sandbox_id}},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "enableServiceLinks": False,
                "terminationGracePeriodSeconds": 0,
                "activeDeadlineSeconds": int(self.max_lifetime_seconds),
                "containers": [container],
            },
        }

    def _deny_all_policy(self) -> dict[str, Any]:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": self.sandbox_id, "labels": {**MANAGED_BY, SANDBOX_LABEL: self.sandbox_id}},
            "spec": {"podSelector": {"matchLabels": {SANDBOX_LABEL: self.sandbox_id}},
                     "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []},
        }

    def _start(self) -> None:
        if not self.limits.network:
            # Before the pod: no moment in which the pod runs without the policy.
            self._checked(["create", "-f", "-"], input=json.dumps(self._deny_all_policy()).encode())
        self._checked(["create", "-f", "-"], input=json.dumps(self._pod_manifest()).encode())
        self._wait_running()
        if not self.limits.network:
            self._check_isolated()
        self._prepare()

    def _wait_running(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            pod = json.loads(self._checked(["get", "pod", self.name, "-o", "json"]))
            status = pod.get("status", {})
            phase = status.get("phase")
            for container in status.get("containerStatuses", []):
                waiting = container.get("state", {}).get("waiting")
                if waiting and waiting.get("reason") in FATAL_WAITING:
                    raise SandboxError(f"pod {self.name} cannot start: {waiting.get('reason')}: "
                                       f"{waiting.get('message', '')}".rstrip(": "))
                if container.get("state", {}).get("running"):
                    self.pod_ip = status.get("podIP")
                    return
            if phase in ("Failed", "Succeeded"):
                raise SandboxError(f"pod {self.name} ended before it ran ({phase}: {status.get('reason', '')})")
            if time.monotonic() > deadline:
                conditions = "; ".join(f"{c.get('type')}={c.get('status')} {c.get('message', '')}".strip()
                                       for c in status.get("conditions", []))
                raise SandboxError(f"pod {self.name} not running after {self.start_timeout:.0f} s "
                                   f"(phase {phase}; {conditions or 'not scheduled'})")
            time.sleep(0.25)

    def _probe_addresses(self) -> list[str]:
        if self._network_probe is not None:
            return list(self._network_probe)
        addresses = []
        service = self._run(["get", "service", "kubernetes", "--namespace=default", "-o",
                             "jsonpath={.spec.clusterIP}"], timeout=30)
        if service.returncode == 0 and service.stdout.strip():
            addresses.append(f"{service.stdout.decode().strip()}:443")
        server = self._server or self._checked(["config", "view", "--minify", "-o",
                                                "jsonpath={.clusters[0].cluster.server}"]).decode()
        parsed = urlparse(server)
        if parsed.hostname:
            addresses.append(f"{parsed.hostname}:{parsed.port or 443}")
        return addresses

    def _check_isolated(self) -> None:
        """Fails closed when the pod can open a TCP connection to a probe address: its NetworkPolicy is not enforced."""
        addresses = self._probe_addresses()
        if not addresses:
            return
        script = ("import socket,sys\n"
                  "for a in sys.argv[1:]:\n"
                  "    h,p=a.rsplit(':',1)\n"
                  "    try:\n"
                  "        socket.create_connection((h.strip('[]'),int(p)),timeout=3).close();print(a);break\n"
                  "    except OSError: pass\n")
        probe = self._exec_argv(["python3", "-c", script, *addresses], timeout=30)
        if probe.returncode != 0:
            raise SandboxError(f"pod {self.name}: the network check could not run: "
                               f"{probe.stderr.decode(errors='replace').strip()}")
        reached = probe.stdout.decode().strip()
        if reached:
            raise SandboxError(f"pod {self.name} reached {reached} although the sandbox has no network: this cluster "
                               "does not enforce NetworkPolicy (use a CNI plugin that does, or limits.network=True)")

    def _prepare(self) -> None:
        """The task's snapshot, made as the local backend makes it (`snapshot_script`): `base_commit` checked out,
        later commits removed, the start patch applied, the setup run, the result committed."""
        if self.task is None:
            return
        start_patch = getattr(self.task, "start_patch", "")
        if start_patch:
            self.write_file(".arclight-start.patch", start_patch.encode())
        script = snapshot_script(getattr(self.task, "base_commit", None), bool(start_patch),
                                 getattr(self.task, "setup", None))
        timeout = float(getattr(self.task, "test_timeout_seconds", 300.0))
        done = self.exec(script, timeout=timeout)
        if done.exit_code != 0:
            raise SandboxError(f"task {getattr(self.task, 'id', '?')}: preparing the snapshot failed "
                               f"(exit {done.exit_code}): {(done.stderr or done.stdout)[-2000:]}")

    # -- commands ------------------------------------------------------------------------------------------------

    def _exec_argv(self, argv: list[str], input: bytes | None = None, timeout: float = 120.0):
        return self._run(["exec", *(["-i"] if input is not None else []), self.name, "-c", CONTAINER, "--", *argv],
                         input=input, timeout=timeout)

    def _prelude(self) -> str:
        """Lines run before the command; on lines of their own, so that `cmd &` backgrounds only the command."""
        lines = [f"cd {shlex.quote(self.workdir)} || exit 125"]
        if self.limits.cpu_seconds is not None:
            lines.append(f"ulimit -t {max(1, int(self.limits.cpu_seconds + 0.999))} || exit 125")
        return "\n".join(lines) + "\n"

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        started = time.monotonic()
        argv = ["timeout", "-s", "KILL", f"{max(timeout, 0.001):.3f}", "bash", "-lc", self._prelude() + cmd]
        # kubectl gets extra time to bring the output back; the command itself is killed in the pod at `timeout`.
        done = self._exec_argv(argv, timeout=timeout + 60)
        seconds = time.monotonic() - started
        stderr = done.stderr.decode(errors="replace")
        if done.returncode != 0 and _kubectl_failed(stderr):
            raise SandboxError(f"cannot exec in pod {self.name}: {stderr.strip()}")
        timed_out = done.returncode == KILLED_BY_TIMEOUT and seconds >= timeout
        # kubectl adds a line of its own for a non-zero exit: it is not the command's output.
        stderr = stderr.removesuffix(f"command terminated with exit code {done.returncode}\n")
        return ExecResult(exit_code=-9 if timed_out else done.returncode,
                          stdout=done.stdout[: self.max_output_bytes].decode(errors="replace"),
                          stderr=stderr.encode()[: self.max_output_bytes].decode(errors="replace"),
                          timed_out=timed_out, seconds=seconds)

    # -- files ---------------------------------------------------------------------------------------------------

    def _pod_path(self, path: str) -> str:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        joined = posixpath.normpath(posixpath.join(self.workdir, path))
        if joined != self.workdir and not joined.startswith(self.workdir.rstrip("/") + "/"):
            raise SandboxError(f"{path}: leaves the working directory {self.workdir}")
        return joined

    def read_file(self, path: str) -> bytes:
        target = self._pod_path(path)
        # realpath in the pod: a symlink the agent made must not lead out of the working directory.
        done = self._exec_argv(["sh", "-c", 'r=$(realpath -m -- "$1") && case "$r/" in "$2"/*) ;; *) exit 3;; esac '
                                '&& { [ -f "$r" ] || exit 2; } && cat -- "$r"', "_", target, self.workdir.rstrip("/")])
        if done.returncode == 2:
            raise FileNotFoundError(path)
        if done.returncode == 3:
            raise SandboxError(f"{path}: leaves the working directory {self.workdir}")
        if done.returncode != 0:
            raise SandboxError(f"cannot read {path}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def write_file(self, path: str, data: bytes) -> None:
        target = self._pod_path(path)
        done = self._exec_argv(["sh", "-c", 'r=$(realpath -m -- "$1") && case "$r/" in "$2"/*) ;; *) exit 3;; esac '
                                '&& mkdir -p -- "$(dirname -- "$r")" && cat > "$r"', "_", target,
                                self.workdir.rstrip("/")], input=data)
        if done.returncode == 3:
            raise SandboxError(f"{path}: leaves the working directory {self.workdir}")
        if done.returncode != 0:
            raise SandboxError(f"cannot write {path}: {done.stderr.decode(errors='replace').strip()}")

    # -- life ----------------------------------------------------------------------------------------------------

    def reset(self) -> None:
        if self.closed:
            raise SandboxError("the sandbox is closed")
        self._run(["delete", "pod", self.name, "--grace-period=0", "--force", "--wait=true", "--ignore-not-found"],
                  timeout=120)
        self.name = f"{self.sandbox_id}-{len(self._pod_names)}"
        self._pod_names.append(self.name)
        try:
            self._checked(["create", "-f", "-"], input=json.dumps(self._pod_manifest()).encode())
            self._wait_running()
            self._prepare()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._finalizer()
            atexit.unregister(self._finalizer)


def _kubectl_failed(stderr: str) -> bool:
    """Whether kubectl itself failed (no pod, no access, no server), as opposed to the command exiting non-zero."""
    return stderr.startswith(("error: ", "Error from server", "Unable to connect to the server"))


def _delete_objects(kubectl: list[str], pod_names: list[str], sandbox_id: str) -> None:
    """Deletes the sandbox's current pod and its NetworkPolicy, without waiting for the pod to be gone."""
    for kind, name in (("pod", pod_names[-1]), ("networkpolicy", sandbox_id)):
        try:
            subprocess.run([*kubectl, "delete", kind, name, "--grace-period=0", "--force", "--wait=false",
                            "--ignore-not-found"], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            pass
