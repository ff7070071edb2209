"""`--config` and `--scenario` mean the same before and after the command (issue #35):
a top-level `--config` was silently dropped (argparse copied the command's default of
None over it), `--scenario` was refused by predict, report, whatif and exporter, and
report did not know the bundled scenario names."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotatop.cli import build_parser, main

COMMANDS = ["snapshot", "predict", "report", "whatif", "record", "advise", "exporter"]


def required(command: str, tmp_path: Path) -> list[str]:
    """What each command cannot run without, so that the config is what fails."""
    return {"snapshot": ["--source", "demo"], "whatif": ["--set", "team=storm max.gpu=8"],
            "exporter": ["--port", "0"], "advise": ["--history", "1d", "--source", "slurm"],
            "record": ["--source", "demo", "--out", str(tmp_path / "r.sqlite")]}.get(command, [])


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_config_is_refused_before_or_after_the_command(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.toml")
    extra = required(command, tmp_path)
    for argv in (["--config", missing, command, *extra], [command, "--config", missing, *extra]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"quotatop: {missing}: no such config file"], (argv, err)


def test_a_malformed_config_given_at_the_top_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("source = [unclosed\n")
    assert main(["--config", str(bad), "snapshot", "--source", "demo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"quotatop: {bad}"), err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_that_opens_a_source_takes_scenario(command: str, tmp_path: Path) -> None:
    extra = required(command, tmp_path)
    for argv in (["--scenario", "queue_storm", command, *extra],
                 [command, "--scenario", "queue_storm", *extra]):
        args = build_parser().parse_args(argv)
        assert args.scenario == "queue_storm", argv
    args = build_parser().parse_args([command, *extra])
    assert args.scenario is None and args.config is None


def test_predict_and_report_play_a_bundled_scenario_by_name(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predict", "--scenario", "queue_storm"]) == 0
    assert capsys.readouterr().out.startswith("demo:queue_storm ")
    assert main(["--scenario", "queue_storm", "report"]) == 0
    assert "demo:queue_storm demo" in capsys.readouterr().out.splitlines()[0]
    assert main(["report", "--source", "demo", "queue_storm"]) == 0
    assert "demo:queue_storm demo" in capsys.readouterr().out.splitlines()[0]


def test_an_unknown_scenario_name_is_one_line_everywhere(
        capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["report", "--scenario", "nosuch"], ["predict", "--scenario", "nosuch"],
                 ["--scenario", "nosuch", "snapshot", "--source", "demo"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("quotatop: nosuch: no such scenario"), err
