"""The `arclight-torch serve` command line: bad flags stop it with one line naming the flag, before a model loads."""

from arclight_torch.cli import main


def test_negative_lora_rank_is_refused_naming_the_flag(capsys):
    assert main(["serve", "--model", "new:qwen2-tiny", "--lora-rank", "-3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "arclight-torch: --lora-rank -3: expected 0 (train every weight) or a positive rank"
    )


def test_serve_stops_when_the_parent_named_in_the_environment_is_gone():
    """A worker started by arclight gets ARCLIGHT_PARENT_PID; once that process is no longer its parent (it died,
    even by SIGKILL), the worker shuts its server down and exits 0 instead of running on."""
    import os
    import subprocess
    import sys

    other = subprocess.Popen(["sleep", "30"])  # alive, but not the worker's parent
    try:
        env = {**os.environ, "ARCLIGHT_PARENT_PID": str(other.pid)}
        worker = subprocess.run(
            [sys.executable, "-m", "arclight_torch", "serve", "--model", "new:qwen2-tiny", "--port", "0"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        other.kill()
    assert worker.returncode == 0, worker.stderr
    assert "arclight-torch listening on http://" in worker.stdout


def test_each_rank_runs_the_command_without_the_launch_flags():
    from arclight_torch.cli import rank_argv

    argv = ["serve", "--model", "new:qwen2-tiny", "--nproc-per-node", "2", "--nnodes=1", "--rdzv-endpoint", "h:29500",
            "--node-rank", "0", "--activation-checkpointing", "--port", "0"]
    assert rank_argv(argv) == ["serve", "--model", "new:qwen2-tiny", "--activation-checkpointing", "--port", "0"]


def test_a_rank_count_below_one_is_refused_naming_the_flag(capsys):
    from arclight_torch.cli import main

    assert main(["serve", "--model", "new:qwen2-tiny", "--nproc-per-node", "0"]) == 2
    assert "--nproc-per-node 0: expected 1 or more" in capsys.readouterr().err


def test_flags_that_cannot_work_are_refused_naming_the_flag_before_any_rank_starts(capsys):
    """Each would otherwise crash with a traceback (--device gpu), wait forever for nodes that never come (--nnodes
    without a rendezvous), or be ignored (the others)."""
    cases = {
        ("--device", "gpu"): "--device gpu: expected cpu, cuda or cuda:N",
        ("--nproc-per-node", "2", "--nnodes", "2"):
            "--nnodes 2: needs --rdzv-endpoint HOST:PORT (the rendezvous every node joins)",
        ("--nproc-per-node", "2", "--node-rank", "1"):
            "--node-rank 1: needs --rdzv-endpoint HOST:PORT (and --nnodes above 1)",
        ("--nnodes", "2"): "--nnodes: needs --nproc-per-node (the ranks of this node)",
        ("--rdzv-endpoint", "h:29500"): "--rdzv-endpoint: needs --nproc-per-node (the ranks of this node)",
        ("--micro-batch-tokens", "0"): "--micro-batch-tokens 0: expected 1 or more",
        ("--logprob-chunk", "-1"): "--logprob-chunk -1: expected 0 (all positions at once) or more",
    }
    for flags, message in cases.items():
        assert main(["serve", "--model", "new:qwen2-tiny", *flags]) == 2, flags
        assert capsys.readouterr().err.strip() == f"arclight-torch: {message}"
