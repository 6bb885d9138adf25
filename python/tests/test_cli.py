"""The `arclight-torch serve` command line: bad flags stop it with one line naming the flag, before a model loads."""

from arclight_torch.cli import main


def test_negative_lora_rank_is_refused_naming_the_flag(capsys):
    assert main(["serve", "--model", "new:qwen2-tiny", "--lora-rank", "-3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "arclight-torch: --lora-rank -3: expected 0 (train every weight) or a positive rank"
    )
