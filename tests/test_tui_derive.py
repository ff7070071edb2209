"""The numbers the screens show, computed without Textual."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from tui_fixtures import snapshot

from quotatop.collectors.errors import UserError
from quotatop.config import load_config
from quotatop.tui.derive import derive, preemptor, reclaim_order
from quotatop.tui.filtering import JobFilter
from quotatop.tui.format import bar, sparkline
from quotatop.tui.reasons import in_words
from quotatop.tui_launch import resolve


def test_borrowing_lending_and_meter() -> None:
    d = derive(snapshot())
    rows = {r.name: r for r in d.teams}
    assert rows["elastic"].borrowed_from == {"prod": 2.0}
    assert rows["prod"].lent_to == {"elastic": 2.0}
    assert rows["exp"].borrowed == 0 and rows["exp"].utilization == 1.0
    assert rows["hpc"].guarantee is None and rows["hpc"].quota == 16.0
    assert (d.meter.total, d.meter.used, d.meter.stranded, d.meter.free) == (80, 66, 12, 2)
    assert not d.overcommit and d.guarantee_sum == 80


def test_lendable_caps_what_a_team_lends() -> None:
    snap = snapshot()
    snap.teams[0].lendable = {"gpu": 1.0}
    rows = {r.name: r for r in derive(snap).teams}
    assert rows["elastic"].borrowed_from == {"prod": 1.0}


def test_overcommit_counts_guarantees_not_maxes() -> None:
    snap = snapshot()
    snap.teams[2].guarantee = {"gpu": 20.0}
    d = derive(snap)
    assert d.overcommit and d.guarantee_sum == 92


def test_preemption_and_reclaim_order() -> None:
    snap = snapshot()
    job = preemptor(snap)
    assert job is not None and job.id == "2001"
    order = reclaim_order(snap, derive(snap).teams)
    assert [r.job.id for r in order["prod"]] == ["1010"]


def test_filter_terms_and_words() -> None:
    jobs = snapshot().jobs
    assert [j.id for j in JobFilter("team:exp state:pend").apply(jobs)] == ["2002", "2003"]
    assert [j.id for j in JobFilter("quota").apply(jobs)] == ["2004"]
    assert JobFilter("").apply(jobs) is jobs


def test_formatters() -> None:
    assert bar(0.5, 8) == "████    "
    assert len(bar(1.7, 5)) == 5
    assert sparkline([0, 4, 8], 4) == " ▁▅█"
    assert in_words("QOSMaxGRESPerUser") == "user at the QoS per-user GPU limit (QOSMaxGRESPerUser)"
    assert in_words("SomethingNew") == "SomethingNew"
    assert in_words("Reservation") == ("waiting for its advanced reservation to begin "
                                       "(Reservation)")


def _args(**kw: object) -> argparse.Namespace:
    base = {"source": None, "refresh": None, "config": None, "scenario": None,
            "record_dir": None}
    base.update(kw)
    return argparse.Namespace(**base)


def test_config_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "quotatop" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('source = "replay"\nrefresh = 3\n[sources.replay]\nrecording = "rec.qtr"\n'
                   '[sources.demo]\nscenario = "file.toml"\n'
                   '[tui]\ntheme = "nord"\nrecord_dir = "/scratch/rec"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    launch = resolve(_args())
    assert (launch.kind, launch.options.recording, launch.refresh, launch.theme) == (
        "replay", "rec.qtr", 3.0, "nord")
    assert launch.record_dir == Path("/scratch/rec") and launch.options.refresh == 3.0
    flagged = resolve(_args(source=["demo"], refresh=0.5, record_dir="/tmp/r"))
    assert (flagged.kind, flagged.options.scenario, flagged.refresh) == ("demo", "file.toml", 0.5)
    assert flagged.options.refresh == 0.5 and flagged.record_dir == Path("/tmp/r")
    assert resolve(_args(source=["demo", "b.toml"])).options.scenario == "b.toml"
    assert resolve(_args(scenario="c.toml", source=["demo"])).options.scenario == "c.toml"
    assert resolve(_args(source=["replay", "other.qtr"])).options.recording == "other.qtr"


def test_the_tui_reads_the_same_options_as_snapshot(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('source = "slurm"\n[poll]\nslurm = 7\n[sources.slurm]\nssh_host = "login1"\n')
    launch = resolve(_args(config=str(cfg), refresh=1.0))
    assert launch.kind == "slurm" and launch.refresh == 1.0
    # The file's per-source poll wins over --refresh for the collector; the view uses --refresh.
    assert launch.options == load_config(cfg).source_options("slurm")
    assert launch.options.ssh_host == "login1" and launch.options.refresh == 7


@pytest.mark.parametrize(("content", "args", "message"), [
    ("[tui\n", {}, r"c\.toml: not TOML"),
    ("refresh = -1\n", {}, r"c\.toml: at refresh: Expected `float` > 0"),
    ("[tui]\ncolour = 1\n", {}, r"c\.toml: at tui: .*unknown field `colour`"),
    ("[tui]\nrefresh = 2\n", {}, r"c\.toml: at tui\.refresh: moved; write refresh"),
    ("", {"refresh": 0.0}, "--refresh must be a positive"),
    ("", {"source": ["replay"]}, "needs a file"),
    ("", {"source": ["slurm", "x"]}, "takes no file"),
    ("", {"source": ["demo", "a", "b"]}, "at most one file"),
    ("", {"source": ["lsf"]}, "unknown source"),
])
def test_bad_config_is_one_line(tmp_path: Path, content: str, args: dict, message: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    with pytest.raises(UserError, match=message) as info:
        resolve(_args(config=str(cfg), **args))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("argv", "message"), [
    (["--source", "replay", "missing.qtr"], "missing.qtr: no such recording"),
    (["--source", "demo", "missing.toml"], "missing.toml: no such scenario file"),
    (["--config", "nope.toml"], "nope.toml: no such config file"),
])
def test_bad_launch_exits_2_with_one_line(argv: list[str], message: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from quotatop.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # not the developer's own file
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_an_account_tree_is_shown_as_a_tree_and_counted_once() -> None:
    """Slurm rolls a child account's usage up into its parent's. The Overview lists each
    account under its parent (depth for the indent), and over-commit adds the roots only:
    org's max of 64 on 64 GPUs is not over-committed by its children's 40 + 40 + 8."""
    from quotatop.collectors.model import Node, Snapshot, Team
    from quotatop.tui.derive import derive

    teams = [Team(name="a", parent="org", max={"gpu": 40.0}),
             Team(name="b", parent="org", max={"gpu": 40.0}),
             Team(name="org", max={"gpu": 64.0}),
             Team(name="a1", parent="a", max={"gpu": 8.0}),
             Team(name="x", parent="gone", max={"gpu": 0.0})]  # a parent that is no team
    snap = Snapshot(teams=teams, nodes=[Node(name=f"n{i}", capacity={"gpu": 8.0})
                                        for i in range(8)])
    d = derive(snap)
    assert [(r.name, r.depth) for r in d.teams] == [
        ("org", 0), ("a", 1), ("a1", 2), ("b", 1), ("x", 0)]
    assert d.guarantee_sum == 64.0 and d.capacity == 64.0 and not d.overcommit
