"""`--config` and `--scenario` mean the same before and after the command (issue #35):
a top-level `--config` was silently dropped (argparse copied the command's default of
None over it), `--scenario` was refused by predict, report, whatif and exporter, and
report did not know the bundled scenario names."""

from __future__ import annotations

import argparse
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


# ---- every command, found by walking the parser (#35 4b) ---------------------------------

def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, as build_parser registers them: a new command is
    covered by the tests below without being listed here."""
    for action in build_parser()._actions:  # argparse lists its subparsers nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("quotatop has no subcommands")


# What a command cannot run without, so that only the config can fail it. A command
# missing here and needing more is refused by argparse with another line: the test fails
# and says so.
RUNNABLE = {"simulate": ["queue_storm"], "replay": ["{tmp}/none.qtr"],
            "advise": ["--trace", "nasa-ipsc", "--candidates", "2", "--workers", "0"],
            "web": ["--port", "1"]}


def runnable(command: str, tmp_path: Path) -> list[str]:
    words = RUNNABLE.get(command) or required(command, tmp_path)
    return [w.replace("{tmp}", str(tmp_path)) for w in words]


def bad_configs(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, the start of the one line that refuses it)."""
    malformed = tmp_path / "malformed.toml"
    malformed.write_text("source = [unclosed\n")
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("refresh = -1\n")
    missing = tmp_path / "missing.toml"
    return {"missing": (str(missing), f"quotatop: {missing}: no such config file"),
            "malformed": (str(malformed), f"quotatop: {malformed}: not TOML"),
            "invalid": (str(wrong), f"quotatop: {wrong}: at refresh")}


@pytest.mark.parametrize("command", ["", *subcommands()])
@pytest.mark.parametrize("kind", ["missing", "malformed", "invalid"])
def test_every_command_refuses_a_bad_config_in_one_line(
        command: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, says = bad_configs(tmp_path)[kind]
    words = [command, *runnable(command, tmp_path)] if command else []
    argvs = [["--config", path, *words]]
    if command and any("--config" in a.option_strings for a in subcommands()[command]._actions):
        argvs.append([command, "--config", path, *words[1:]])
    for argv in argvs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(says), (argv, err)


# ---- a flag the chosen source or command does not read is refused by name -------------

@pytest.mark.parametrize(("argv", "says"), [
    (["predict", "--source", "slurm", "--scenario", "queue_storm"],
     "--scenario applies to --source demo only, not slurm"),
    (["snapshot", "--source", "demo", "--kubeconfig", "k"],
     "--kubeconfig applies to --source k8s only, not demo"),
    (["whatif", "--source", "demo", "--set", "team=storm max.gpu=8", "--context", "c"],
     "--context applies to --source k8s only, not demo"),
    (["report", "--source", "demo", "--prometheus-url", "http://h:1"],
     "--prometheus-url applies to --source prometheus only, not demo"),
    (["snapshot", "--source", "demo", "--recording", "r.qtr"],
     "--recording applies to --source replay or live only, not demo"),
    (["predict", "--source", "demo", "--timeout", "3"],
     "--timeout applies to --source slurm, k8s or prometheus only, not demo"),
    (["--source", "demo", "--kubeconfig", "k"],  # the TUI
     "--kubeconfig applies to --source k8s only, not demo"),
    (["predict", "--source", "demo", "queue_storm", "--scenario", "queue_storm"],
     "--source demo queue_storm and --scenario queue_storm: give the scenario once"),
    (["advise", "--trace", "nasa-ipsc", "--ssh", "h"],
     "advise: --ssh is not read with --trace"),
    (["--ssh", "h", "simulate", "queue_storm"],
     "--ssh given before `simulate`, which does not take it"),
    (["--refresh", "3", "exporter", "--port", "0"],
     "--refresh given before `exporter`, which reads its own"),
    # given before the command it used to vanish (the command's None copied over it)
    (["--kubeconfig", "k", "snapshot", "--source", "demo"],
     "--kubeconfig applies to --source k8s only, not demo"),
])
def test_a_flag_not_read_is_refused_in_one_line(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"quotatop: {says}"), err


def top_flags() -> list[tuple[str, str]]:
    """(flag, dest) of every top-level flag that takes a value."""
    return [(a.option_strings[0], a.dest) for a in build_parser()._actions
            if a.option_strings and a.nargs != 0 and a.dest not in ("help", "version")]


@pytest.mark.parametrize("command", [c for c in subcommands() if c != "web"])
def test_a_flag_before_the_command_is_kept_or_refused_never_dropped(
        command: str, tmp_path: Path) -> None:
    from quotatop.cli import _Namespace, check_top_flags
    from quotatop.collectors.errors import UserError

    parser = build_parser()
    for flag, dest in top_flags():
        value = "http://h:1" if flag == "--prometheus-url" else "7"
        # FLAG=VALUE: --source takes words until the next flag, the command's name too
        args = parser.parse_args([f"{flag}={value}", command, *runnable(command, tmp_path)],
                                 namespace=_Namespace())
        kept = getattr(args, dest) in (value, [value], 7.0)
        try:
            check_top_flags(parser, args)
        except UserError as e:
            assert str(e).startswith(f"{flag} given before `{command}`"), e
        else:
            assert kept, (flag, command, getattr(args, dest))


@pytest.mark.parametrize("argv", [["replay", "{rec}", "--json"], ["simulate", "queue_storm"]])
def test_a_good_config_after_replay_or_simulate_is_taken_as_before_them(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Flags parse the same wherever they appear (issue #35): ``replay F --config C`` was
    refused ("unrecognized arguments") where ``--config C replay F`` ran."""
    good = tmp_path / "ok.toml"
    good.write_text("refresh = 2\n")
    rec = tmp_path / "r.qtr"
    assert main(["record", "--source", "demo", "--out", str(rec), "--frames", "2",
                 "--interval", "0.05"]) == 0
    words = [w.format(rec=rec) for w in argv]
    capsys.readouterr()
    assert main([*words, "--config", str(good)]) == 0
    after = capsys.readouterr().out
    assert main(["--config", str(good), *words]) == 0
    assert capsys.readouterr().out == after
