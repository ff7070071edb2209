"""Every command that opens a scenario takes a bundled one by name (#35): ``queue_storm``
(or ``queue_storm.toml``) is demo_data/queue_storm.toml wherever quotatop runs from. Each
command's answer for the name is its answer for the file's full path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import DEMO
from quotatop.cli import main

# Each command with {} where the scenario goes.
COMMANDS = {
    "simulate": ["simulate", "{}"],
    "report": ["report", "--source", "demo", "{}", "--format", "json"],
    "report --scenario": ["report", "--scenario", "{}", "--format", "json"],
    "predict": ["predict", "--source", "demo", "{}", "--json", "--samples", "0"],
    "snapshot": ["snapshot", "--source", "demo", "--scenario", "{}", "--json"],
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["queue_storm", "queue_storm.toml"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bundled_name_is_the_bundled_file(command: str, name: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no queue_storm.toml here: the name must be resolved
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file
    by_path = run([w.format(DEMO / "queue_storm.toml") for w in COMMANDS[command]], capsys)
    by_name = run([w.format(name) for w in COMMANDS[command]], capsys)
    assert by_path[0] == 0, by_path[2]
    assert by_name[0] == 0, by_name[2]
    assert by_path[1], "the command printed nothing"
    if command == "snapshot":  # a snapshot's moment is the collect's: compare the rest
        import json

        a, b = json.loads(by_path[1]), json.loads(by_name[1])
        assert {k: v for k, v in a.items() if k != "taken_at"} == \
            {k: v for k, v in b.items() if k != "taken_at"}
    elif command.startswith("report"):  # the report states when it was made
        import json

        a, b = json.loads(by_path[1]), json.loads(by_name[1])
        a.pop("generated_at", None), b.pop("generated_at", None)
        assert a == b
    else:
        assert by_name[1] == by_path[1]


def test_simulate_refuses_an_unknown_name_naming_the_bundled_scenarios_and_traces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["simulate", "queue_stormy"], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    assert "queue_storm" in err and "NASA-iPSC" in err


def test_a_file_in_the_current_directory_wins_over_a_bundled_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = (DEMO / "seed_fifo.toml").read_text()
    Path(tmp_path / "queue_storm.toml").write_text(mine)
    assert os.path.exists("queue_storm.toml")
    _, own, _ = run(["simulate", "queue_storm.toml"], capsys)
    _, seed, _ = run(["simulate", str(DEMO / "seed_fifo.toml")], capsys)
    assert own == seed
