"""Issue #18: bundled scenarios by name — `quotatop --scenario queue_storm` plays
demo_data/queue_storm.toml wherever quotatop is installed, from any directory."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

import quotatop.sources as sources
from quotatop.cli import build_parser, main
from quotatop.sources import DEMO_DATA, SourceOptions, bundled_scenarios, open_source
from quotatop.tui_launch import resolve


@pytest.mark.parametrize("given", ["queue_storm", "queue_storm.toml"])
def test_a_bundled_name_plays_from_any_directory(
        given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An installed layout: demo_data beside the packages, not in the cwd.
    installed = tmp_path / "site-packages" / "demo_data"
    shutil.copytree(DEMO_DATA, installed, ignore=shutil.ignore_patterns("traces"))
    monkeypatch.setattr(sources, "DEMO_DATA", installed)
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    launch = resolve(build_parser().parse_args(["--scenario", given]))
    col = open_source(launch.kind, launch.options)
    try:
        assert col.name == "demo:queue_storm"
        assert col.collect().teams
    finally:
        col.close()


def test_a_file_in_the_current_directory_wins(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(DEMO_DATA / "seed_fifo.toml", tmp_path / "queue_storm.toml")
    assert sources.scenario_path("queue_storm.toml") == "queue_storm.toml"


def test_an_unknown_name_lists_the_bundled_ones_on_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--scenario", "queue_strom"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "quotatop: queue_strom: no such scenario file, nor a bundled scenario" in err
    assert f"(bundled: {', '.join(bundled_scenarios())})" in err
    assert "queue_storm" in bundled_scenarios() and "split_60_30_10" in bundled_scenarios()


def test_a_missing_path_still_says_no_such_file(tmp_path: Path) -> None:
    from quotatop.collectors.errors import UserError

    with pytest.raises(UserError, match="no such scenario file"):
        open_source("demo", SourceOptions(scenario=str(tmp_path / "queue_storm")))


def test_the_wheel_ships_demo_data() -> None:
    # The wheel holds demo_data/ inside the package (quotatop/demo_data, a link in the
    # repository), where DEMO_DATA finds it beside the rooms.
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert "quotatop/demo_data/**/*" in tomllib.loads(pyproject)["tool"]["maturin"]["include"]
    assert (Path(sources.__file__).parent / "demo_data").resolve() == DEMO_DATA
