"""Each demo scenario, played through ScenarioSource (core simulate + predict per
frame) and the incident detectors: the right incident at the right moment, and
no other kind. Times are scenario seconds (frame time minus EPOCH)."""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

import msgspec
import pytest
from textual.widgets import DataTable

from conftest import DEMO
from quotatop.collectors.model import PENDING, RUNNING, Snapshot
from quotatop.incidents import Incident, detect_incidents
from quotatop.simulation.scenario import ScenarioV2, load_scenario
from quotatop.simulation.scenario_playback import EPOCH
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.simulation.scenario_timeline import ScenarioTimeline
from quotatop.tui.app import QuotatopApp

SCENARIOS = ["tour", "split_60_30_10", "qos_preemption", "starvation_aging", "queue_storm",
             "queue_storm_maxsubmit", "overcommit", "fragmentation"]


@cache
def play(name: str) -> tuple[tuple[Snapshot, ...], tuple[Incident, ...]]:
    source = ScenarioSource(load_scenario(DEMO / f"{name}.toml"), loop=False)
    snaps = tuple(source.snapshots())
    return snaps, tuple(detect_incidents(snaps))


def at(snaps: tuple[Snapshot, ...], t: float) -> Snapshot:
    """The last frame at or before scenario second t."""
    return [s for s in snaps if s.taken_at - EPOCH <= t][-1]


def team(snap: Snapshot, name: str):  # type: ignore[no-untyped-def]
    return next(t for t in snap.teams if t.name == name)


def job(snap: Snapshot, job_id: str):  # type: ignore[no-untyped-def]
    return next(j for j in snap.jobs if j.id == job_id)


def rel(t: float | None) -> float | None:
    return None if t is None else t - EPOCH


def test_split_borrows_then_prod_reclaims_without_incident() -> None:
    snaps, incidents = play("split_60_30_10")
    assert incidents == ()
    before = at(snaps, 599)
    # prod idle: exp holds 80 (30 own + 50 borrowed), elastic 20 (10 + 10).
    assert team(before, "prod").usage.get("gpu", 0) == 0
    assert (team(before, "exp").usage["gpu"], team(before, "exp").borrowed["gpu"]) == (80, 50)
    assert (team(before, "elastic").usage["gpu"],
            team(before, "elastic").borrowed["gpu"]) == (20, 10)
    after = at(snaps, 600)
    # prod takes back what it can without pushing anyone below its guarantee:
    # 4-GPU jobs leave exp at 32 and elastic at 12, so prod runs 56 of its 60.
    assert team(after, "prod").usage["gpu"] == 56
    assert team(after, "exp").usage["gpu"] == 32 and team(after, "exp").borrowed["gpu"] == 2
    assert team(after, "elastic").usage["gpu"] == 12
    assert int(after.meta["preemptions"]) == 14  # 48 GPUs from exp, 8 from elastic
    requeued = [j for j in after.jobs if j.team != "prod" and j.state == PENDING]
    assert len(requeued) == 14 and all(rel(j.eligible_time) == 600 for j in requeued)
    assert all(j.reason for j in requeued)  # the core's words for why each waits
    total = sum(n.allocated.get("gpu", 0) for n in after.nodes)
    assert total == 100  # the cluster stays full through the reclaim


def test_qos_preemption_requeues_best_effort_work_without_incident() -> None:
    snaps, incidents = play("qos_preemption")
    assert incidents == ()
    s = at(snaps, 100)
    assert job(s, "serve").state == RUNNING and job(s, "serve").nodes == ["node02"]
    # The two most recently started BestEffort jobs made room, and wait again.
    assert {j.id for j in s.jobs if j.state == PENDING} == {"be-3", "be-4"}
    assert "serve ends" in (job(s, "be-3").reason or "")
    later = at(snaps, 1900)
    assert job(later, "be-3").state == RUNNING and job(later, "be-4").state == RUNNING


def test_starvation_opens_after_an_hour_and_aging_ends_it() -> None:
    snaps, incidents = play("starvation_aging")
    assert [i.kind for i in incidents] == ["starvation"]
    inc = incidents[0]
    big = next(j for s in snaps for j in s.jobs if j.id == "big" and j.state == RUNNING)
    # Submitted at 10; starving from one hour of waiting (the first frame after 3610).
    assert 3610 <= rel(inc.opened_at) <= 3700  # type: ignore[operator]
    assert inc.closed_at == big.start_time and 5000 < rel(big.start_time) < 6000  # type: ignore[operator]
    assert inc.teams[0] == "batch" and inc.jobs[0] == "big"
    assert all(j.startswith("small-") for j in inc.jobs[1:]) and "interactive" in inc.teams
    assert "age_priority_per_hour_needed" in inc.details


def test_without_aging_the_batch_job_starves_until_the_stream_ends() -> None:
    s = load_scenario(DEMO / "starvation_aging.toml")
    assert isinstance(s, ScenarioV2)
    weights = {**s.settings["weights"], "age": 0}  # type: ignore[dict-item]
    s = msgspec.structs.replace(s, settings={**s.settings, "weights": weights})
    incidents = detect_incidents(ScenarioSource(s, loop=False).snapshots())
    assert [i.kind for i in incidents] == ["starvation"]
    # The stream's last job is submitted at 7950 and ends at 8150: only then.
    assert rel(incidents[0].closed_at) >= 8000  # type: ignore[operator]


def test_queue_storm_fires_at_once_names_the_victim_and_suggests_max_submit() -> None:
    snaps, incidents = play("queue_storm")
    assert [i.kind for i in incidents] == ["queue_storm"]
    inc = incidents[0]
    assert 0 <= rel(inc.opened_at) <= 300  # type: ignore[operator]
    assert inc.teams[0] == "storm" and "steady" in inc.teams
    assert inc.jobs and all(j.startswith("storm-") for j in inc.jobs)
    assert "MaxSubmitJobs" in (inc.suggestion or "")
    # It closes when the storm's queue falls below half the threshold (250).
    closed = at(snaps, rel(inc.closed_at))  # type: ignore[arg-type]
    assert sum(j.team == "storm" and j.state == PENDING for j in closed.jobs) < 250


def test_max_submit_caps_the_storm_so_none_fires() -> None:
    snaps, incidents = play("queue_storm_maxsubmit")
    assert incidents == ()
    assert max(sum(j.team == "storm" for j in s.jobs) for s in snaps) == 100
    assert snaps[-1].meta["rejected"] == "900"


def test_overcommit_500_granted_on_300() -> None:
    _, incidents = play("overcommit")
    assert [i.kind for i in incidents] == ["overcommit"]
    inc = incidents[0]
    assert rel(inc.opened_at) == 0 and inc.closed_at is None
    assert inc.teams == ["a", "b", "c"]
    assert (inc.details["granted"], inc.details["capacity"]) == (500, 300)
    assert inc.details["ratio"] == pytest.approx(500 / 300)


def test_fragmentation_strands_two_gpus_in_holes_of_one() -> None:
    snaps, incidents = play("fragmentation")
    assert [i.kind for i in incidents] == ["fragmentation"]  # and never a partial gang
    inc = incidents[0]
    assert rel(inc.opened_at) == 60 and rel(inc.closed_at) == 2000
    assert inc.jobs == ["small"] and inc.teams == ["z"]
    assert (inc.details["free"], inc.details["largest_hole"]) == (2, 1)
    s = at(snaps, 60)
    assert sorted(n.allocated["gpu"] for n in s.nodes) == [7, 7]


def test_v2_timeline_seeks_by_simulated_time_and_marks_incidents() -> None:
    source = ScenarioSource(load_scenario(DEMO / "overcommit.toml"), loop=False)
    tl = ScenarioTimeline(source)
    assert tl.start_time == EPOCH and tl.end_time > EPOCH
    tl.seek(EPOCH + 150)
    assert tl.time_at(tl.position) == EPOCH + 100
    assert source.snapshot_at(tl.position).meta["time"] == "100"
    tl.step(-1)  # the same instant, just before its preemption
    assert tl.paused and tl.time_at(tl.position) == EPOCH + 100
    assert source.snapshot_at(tl.position).meta["moment"] == "before preemption"
    tl.step(-1)
    assert tl.time_at(tl.position) < EPOCH + 100
    assert [m.title.split(":")[0] for m in tl.incident_marks()] == ["overcommit"]


def test_default_quotatop_plays_the_tour(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop.commands.record import make_source
    from quotatop.sources import open_source
    from quotatop.tui_launch import resolve

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file: every default
    launch = resolve(argparse.Namespace(source=None, refresh=None, config=None, scenario=None))
    source = open_source(launch.kind, launch.options)
    assert source.name == "demo:tour" and source.playback is not None
    # `quotatop record --source demo` records that same default demo.
    recorded = make_source(argparse.Namespace(source="demo", ssh=None, interval=2.0,
                                              scenario=None, prometheus_url=None,
                                              kubeconfig=None, context=None, config=None))
    assert recorded.name == source.name
    source.close()
    recorded.close()


@pytest.mark.parametrize("name", SCENARIOS)
async def test_each_scenario_replays_in_the_tui(name: str) -> None:
    scenario = load_scenario(DEMO / f"{name}.toml")
    source = ScenarioSource(scenario, loop=False)
    app = QuotatopApp(source, refresh=0.05)
    async with app.run_test() as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.snapshot is not None and source.position >= 2:
                break
        table = app.query_one("#teams", DataTable)
        names = {str(table.get_row_at(i)[0]) for i in range(table.row_count)}
        assert names == {t.name for t in scenario.teams}
        assert source.position >= 2  # it plays
        await pilot.press("q")
