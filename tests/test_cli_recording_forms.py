"""``--source replay FILE`` and ``--source replay --recording FILE`` are one form for
every command that opens a source (issue #32 item 5): ``snapshot`` took only the flag
and ``predict`` only the word. Both give the same answer; a flag that names another
file, or a recording for a source that reads none, is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotatop.cli import main

# Every command that opens a source and prints what it read, with what it needs besides.
COMMANDS = {"snapshot": ["--json"], "predict": ["--json"], "report": ["--format", "json"],
            "whatif": ["--set", "team=exp max.gpu=24", "--json"]}


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rec") / "demo.qtr"
    assert main(["record", "--source", "demo", "--out", str(path), "--frames", "4",
                 "--interval", "0.05"]) == 0
    return path


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, (argv, capsys.readouterr().err)
    out = json.loads(capsys.readouterr().out)
    for volatile in ("elapsed_s", "predict_s", "taken_at_wall"):  # timings of this run
        out.pop(volatile, None)
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_the_file_as_a_word_and_as_a_flag_are_the_same(
        command: str, recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = COMMANDS[command]
    word = _out([command, "--source", "replay", str(recording), *extra], capsys)
    flag = _out([command, "--source", "replay", "--recording", str(recording), *extra],
                capsys)
    assert word == flag


@pytest.mark.parametrize(("argv", "says"), [
    (["snapshot", "--source", "replay", "A.qtr", "--recording", "B.qtr"],
     "--source replay A.qtr and --recording B.qtr: two recordings; give one"),
    (["predict", "--source", "demo", "--recording", "B.qtr"],
     "--recording applies to --source replay or live only, not demo"),
    (["snapshot", "--source", "slurm", "B.qtr"], "--source slurm takes no file argument"),
    (["record", "--source", "demo", "--out", "x.qtr", "--recording", "B.qtr"],
     "--recording: record reads a cluster and writes --out FILE; it does not read a "
     "recording"),
])
def test_a_recording_that_cannot_mean_anything_is_one_line(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"quotatop: {says}"]


def test_the_tui_takes_both_forms(recording: Path) -> None:
    from quotatop.cli import build_parser
    from quotatop.tui_launch import resolve

    got = []
    for argv in (["--source", "replay", str(recording)],
                 ["--source", "replay", "--recording", str(recording)]):
        launch = resolve(build_parser().parse_args(argv))
        got.append((launch.kind, launch.options.recording))
    assert got == [("replay", str(recording))] * 2
