"""Removes a sandbox's directory (and cgroup) once its owner is gone: run with the owner holding our stdin's pipe, so
EOF on stdin means the owner closed the sandbox or died, even by SIGKILL, when no atexit handler runs.

Usage: python -I _watchdog.py ROOT [CGROUP]
"""

import os
import shutil
import sys
import time


def remove_tree(path: str) -> None:
    """Removes `path`, making read-only directories writable first (a command may have chmod-ed them)."""

    def retry(function, target, _exc):
        parent = os.path.dirname(target)
        try:
            os.chmod(parent, 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
            function(target)
        except OSError:
            pass

    for _ in range(20):
        if not os.path.lexists(path):
            return
        shutil.rmtree(path, onerror=retry)
        if os.path.lexists(path):
            time.sleep(0.1)  # a dying sandbox process may still be writing


def remove_cgroup(path: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)  # processes of the cgroup are still exiting


def main() -> None:
    root, cgroup = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    try:
        sys.stdin.buffer.read()
    except (OSError, KeyboardInterrupt):
        pass
    remove_tree(root)
    if cgroup:
        remove_cgroup(cgroup)


if __name__ == "__main__":
    main()
