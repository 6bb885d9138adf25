"""Loader of the public SWE-bench and SWE-smith instance layouts into `SweTask`s, with the user's repository checkouts
(local sandboxes) or images (Kubernetes sandboxes).

SWE-bench (princeton-nlp/SWE-bench, SWE-bench_Verified): `instance_id`, `repo` (`owner/name`), `base_commit`,
`patch` (the gold fix), `test_patch` (tests added by the fix), `problem_statement`, `FAIL_TO_PASS`, `PASS_TO_PASS`
(JSON-encoded lists of test ids). SWE-smith (SWE-bench/SWE-smith): the same names, but `patch` introduces the bug into
the repository at its mirrored commit, the test lists are plain lists, and `image_name` names the instance's image.

    python -m recipes.swe.swebench_data SWE-bench_Verified.jsonl tasks.jsonl --repos /data/checkouts
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from arclight_agent.sandbox import SweTask
from arclight_agent.sandbox.task import DEFAULT_TEST_COMMAND

HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")


def reverse_patch(patch: str) -> str:
    """The unified diff that undoes `patch` (what `git apply -R` would apply): sides, hunks and file modes swapped."""
    out = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("--- "):
            out.append("+++ " + line[4:])
        elif line.startswith("+++ "):
            out.append("--- " + line[4:])
        elif match := HUNK.match(line.rstrip("\n")):
            out.append(f"@@ -{match.group(2)} +{match.group(1)} @@{match.group(3)}\n")
        elif line.startswith("new file mode"):
            out.append("deleted" + line[3:])
        elif line.startswith("deleted file mode"):
            out.append("new" + line[7:])
        elif line.startswith("+"):
            out.append("-" + line[1:])
        elif line.startswith("-"):
            out.append("+" + line[1:])
        else:
            out.append(line)
    # Within a file's header, `---` must precede `+++`.
    text = "".join(out)
    return re.sub(r"^(\+\+\+ .*\n)(--- .*\n)", r"\2\1", text, flags=re.M)


def test_ids(value: Any, field: str, instance: str) -> list[str]:
    """A test list as SWE-bench (a JSON-encoded string) or SWE-smith (a list) stores it."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f"{instance}: {field} is not a JSON list ({err.msg})") from err
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ValueError(f"{instance}: {field} must be a list of test ids")
    return value


def task_from_instance(row: dict[str, Any], repos: str | Path | None = None, image: str | None = None,
                       test_command: str = DEFAULT_TEST_COMMAND, setup: str | None = None) -> SweTask:
    """One SWE-bench or SWE-smith instance as a task.

    :param repos: a directory of checkouts named `owner__name` (SWE-bench's `repo` with `/` → `__`; SWE-smith's
        `repo` `swesmith/owner__name.commit` → `owner__name.commit`)
    :param image: an image name template (`{instance_id}`, `{repo}`); default: the row's `image_name`
    :param test_command: with `{tests}`; the reward reads pytest's `-rA` summary
    :raises ValueError: a row missing a field of the layout, no checkout or image for it, a bad image template
    """
    missing = [k for k in ("instance_id", "repo", "patch", "problem_statement", "FAIL_TO_PASS") if k not in row]
    if missing:
        raise ValueError(f"{row.get('instance_id', 'a row')}: not a SWE-bench/SWE-smith instance, missing {', '.join(missing)}")
    instance = row["instance_id"]
    fail_to_pass = test_ids(row["FAIL_TO_PASS"], "FAIL_TO_PASS", instance)
    pass_to_pass = test_ids(row.get("PASS_TO_PASS", []), "PASS_TO_PASS", instance)
    is_smith = "image_name" in row or "test_patch" not in row
    checkout = None
    if repos is not None:
        name = row["repo"].split("/")[-1] if is_smith else row["repo"].replace("/", "__")
        checkout = str(Path(repos) / name)
    try:
        image_name = image.format(instance_id=instance, repo=row["repo"]) if image else row.get("image_name")
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(f"image template {image!r}: bad placeholder {err}; use {{instance_id}} and {{repo}}") from None
    if checkout is None and not image_name:
        raise ValueError(f"{instance}: no repository: give checkouts (repos, --repos DIR) or images (image, "
                         "--image TEMPLATE, or the row's image_name)")
    files = sorted({t.split("::")[0] for t in fail_to_pass + pass_to_pass if "::" in t})
    return SweTask(
        id=instance, problem_statement=row["problem_statement"], fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass,
        repo=checkout, image=image_name, base_commit=None if is_smith else row.get("base_commit"),
        start_patch=row["patch"] if is_smith else "", setup=setup, test_command=test_command,
        test_patch="" if is_smith else row.get("test_patch", ""), test_files=files,
        reference_patch=reverse_patch(row["patch"]) if is_smith else row["patch"],
        metadata={"source": "swe-smith" if is_smith else "swe-bench", "repo": row["repo"],
                  **{k: row[k] for k in ("version", "created_at") if k in row}})


def load_instances(path: str | Path, limit: int | None = None, **options: Any) -> list[SweTask]:
    """Reads instances from a JSONL file or a JSON list (as exported from the datasets); see `task_from_instance`.

    :raises ValueError: naming the line of a bad row
    """
    path = Path(path)
    text = path.read_text()
    rows = json.loads(text) if text.lstrip().startswith("[") else [
        (number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    tasks = []
    for index, item in enumerate(rows, 1):
        number, line = item if isinstance(item, tuple) else (index, None)
        try:
            row = json.loads(line) if line is not None else item
            tasks.append(task_from_instance(row, **options))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not JSON ({err.msg})") from err
        except ValueError as err:
            raise ValueError(f"{path}:{number}: {err}") from err
        if limit is not None and len(tasks) >= limit:
            break
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description="SWE-bench / SWE-smith instances -> arclight SWE tasks (JSONL)")
    parser.add_argument("instances", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--repos", help="directory of checkouts named owner__name (local sandboxes)")
    parser.add_argument("--image", help="image name template, e.g. 'swebench/sweb.eval.x86_64.{instance_id}'")
    parser.add_argument("--test-command", default=DEFAULT_TEST_COMMAND)
    parser.add_argument("--setup", help="shell command run in each fresh copy, inside the sandbox (local backend: "
                        "install into a venv in the repository, see docs/sandboxes.md#tasks)")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    try:
        tasks = load_instances(args.instances, args.limit, repos=args.repos, image=args.image,
                               test_command=args.test_command, setup=args.setup)
        args.out.write_text("".join(json.dumps(t.to_row()) + "\n" for t in tasks))
    except (OSError, ValueError) as err:
        parser.exit(1, f"swebench_data: {err}\n")
    print(f"{len(tasks)} tasks -> {args.out}")


if __name__ == "__main__":
    main()
