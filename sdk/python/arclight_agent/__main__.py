"""`python -m arclight_agent run package.module:ClassName`: runs one rollout with a Python agent class (what the
controller starts for a Python `agent_class`). Exit 0 when it returns; 1 with the traceback on stderr when it raises;
2 on a bad command line, a spec that names nothing runnable, or outside a rollout (no rollout environment)."""

from __future__ import annotations

import argparse
import os
import sys

from .env import NotInRollout
from .runner import AgentClassError, run_agent_class


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arclight_agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run this rollout with an agent class")
    run.add_argument("agent_class", help="package.module:ClassName, importable from the working directory")
    args = parser.parse_args(argv)
    # As with `python -m`, the working directory (the controller's `cwd`) is where the agent's modules are found.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        run_agent_class(args.agent_class)
    except (AgentClassError, NotInRollout) as err:
        print(f"arclight agent runner: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
