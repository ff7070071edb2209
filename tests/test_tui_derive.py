"""The numbers the screens show, computed without Textual."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from tui_fixtures import snapshot

from quotatop.errors import UserError
from quotatop.tui_launch import resolve
from tui.derive import derive, preemption_victims, preemptor, reclaim_order
from tui.filtering import JobFilter
from tui.format import bar, sparkline
from tui.reasons import in_words


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
    assert [v.id for v in preemption_victims(snap, job)] == ["1010", "1009"]
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


def _args(**kw: object) -> argparse.Namespace:
    base = {"source": None, "refresh": None, "config": None, "scenario": None}
    base.update(kw)
    return argparse.Namespace(**base)


def test_config_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "quotatop" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('[tui]\nsource = "replay"\nreplay = "rec.qtr"\nrefresh = 3\ntheme = "nord"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert resolve(_args())[:4] == ("replay", "rec.qtr", 3.0, "nord")
    assert resolve(_args(source=["demo"], refresh=0.5))[:3] == ("demo", None, 0.5)


@pytest.mark.parametrize(("content", "args", "message"), [
    ("[tui\n", {}, "invalid TOML"),
    ("[tui]\nrefresh = -1\n", {}, "refresh must be a positive"),
    ("[tui]\ncolour = 1\n", {}, "unknown key 'colour'"),
    ("", {"source": ["replay"]}, "needs a file"),
    ("", {"source": ["slurm", "x"]}, "takes no file"),
    ("", {"source": ["lsf"]}, "unknown source"),
])
def test_bad_config_is_one_line(tmp_path: Path, content: str, args: dict, message: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    with pytest.raises(UserError, match=message):
        resolve(_args(config=str(cfg), **args))
