"""What a long-running TUI keeps stays bounded (issue #16, "Memory in the live TUI").

bench/soak.py --scenario-jobs 8000 measured a demo scenario of 8,000 jobs at 0.2 s
refresh at 245–333 MB RSS after 100 s, growing: the scenario's every frame held as a
Snapshot, every predicted frame of a pass cached (and all of them at once when the
Timeline's incident marks were found), and the live incident detectors keeping every
incident that ever closed. These tests hold each of those to its bound by count, not
by bytes or time.
"""

from __future__ import annotations

import msgspec

from conftest import DEMO
from quotatop.collectors.model import Job, Snapshot
from quotatop.incidents import IncidentMonitor, detect_incidents
from quotatop.incidents.episodes import Episodes
from quotatop.simulation.scenario import ScenarioV2, load_scenario
from quotatop.simulation.scenario_playback import ScenarioPlayback
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.live_incidents import KEEP_CLOSED, LiveIncidents


def _v2(name: str) -> ScenarioV2:
    scenario = load_scenario(DEMO / name)
    assert isinstance(scenario, ScenarioV2)
    return scenario


def _closed_kept(monitor: IncidentMonitor) -> int:
    return len(monitor.before_jump) + sum(
        len(ep.done) for d in monitor.detectors for ep in vars(d).values()
        if isinstance(ep, Episodes))


def test_a_playback_holds_no_snapshot_and_few_predicted_frames() -> None:
    playback = ScenarioPlayback(_v2("starvation_aging.toml"))
    n = len(playback)
    assert n > 2 * ScenarioPlayback.PREDICTED_KEPT
    # The frames are columns to build a snapshot from, not snapshots or jobs.
    for frame in playback._frames:
        assert not any(isinstance(v, Snapshot | Job | list) for v in frame)
    for offset in (0.0, playback.period):
        for i in range(n):
            playback.frame(i, offset)
            assert len(playback._predicted) <= ScenarioPlayback.PREDICTED_KEPT


def test_a_frame_asked_again_is_the_same_frame() -> None:
    playback = ScenarioPlayback(_v2("qos_preemption.toml"))
    n = len(playback)
    first = [msgspec.msgpack.encode(playback.frame(i)) for i in range(n)]
    # Far behind the cache now: built again from the columns, and predicted again.
    assert [msgspec.msgpack.encode(playback.frame(i)) for i in reversed(range(n))] \
        == first[::-1]
    later = playback.frame(n - 1, playback.period)
    assert later.taken_at == playback.frame(n - 1).taken_at + playback.period


def test_incident_marks_do_not_keep_the_play() -> None:
    source = ScenarioSource(_v2("starvation_aging.toml"))
    assert source.playback is not None
    marks = source.incident_marks()
    assert any(m.title.startswith("starvation:") for m in marks)
    assert len(source.playback._predicted) <= ScenarioPlayback.PREDICTED_KEPT
    # The same incidents as the whole play at once would give.
    assert [(i.kind, i.opened_at) for i in source.incidents()] == [
        (i.kind, i.opened_at) for i in detect_incidents(source.snapshots())]


def test_live_incidents_keep_what_they_show_and_no_more() -> None:
    """A looping demo goes on for ever: the incidents that closed are kept once, in the
    live list (at most KEEP_CLOSED), and not again inside the detectors."""
    source = ScenarioSource(_v2("starvation_aging.toml"), loop=True)
    live = LiveIncidents()
    closed_seen = 0
    for _ in range(3 * source.total_steps):  # three passes
        state = live.feed(source.collect())
        closed_seen = max(closed_seen, len(state.closed))
        assert _closed_kept(live.monitor) == 0
        assert len(state.closed) <= KEEP_CLOSED
    assert source.lap >= 2 and closed_seen > 0
    assert not state.error


def test_forget_closed_keeps_the_open_ones() -> None:
    source = ScenarioSource(_v2("queue_storm.toml"), loop=False)
    monitor = IncidentMonitor()
    opened: set[tuple[str, float]] = set()
    for _ in range(source.total_steps):
        monitor.feed(source.collect())
        before = [(i.kind, i.opened_at) for i in monitor.open_incidents()]
        opened |= set(before)
        monitor.forget_closed()
        assert [(i.kind, i.opened_at) for i in monitor.open_incidents()] == before
        assert _closed_kept(monitor) == 0
    assert any(kind == "queue_storm" for kind, _ in opened)


def test_the_charts_keep_a_bounded_history() -> None:
    """The TUI adds one chart sample per frame for ever (a looping demo): at most
    chart_data.KEEP are kept, a frame shown again replacing its own."""
    from quotatop.tui.chart_data import KEEP, ChartHistory, sample_of
    from quotatop.tui.derive import derive

    source = ScenarioSource(_v2("queue_storm.toml"), loop=True)
    history = ChartHistory(keep=2 * source.total_steps)
    derived = derive(source.collect())
    for i in range(5 * source.total_steps):  # five passes; times grow by the period
        history.add(sample_of(derived, float(i)))
    assert len(history) == 2 * source.total_steps
    history.add(sample_of(derived, float(5 * source.total_steps - 1)))  # shown again
    assert len(history) == 2 * source.total_steps
    assert KEEP <= 1000  # ~300 bytes a sample: the default stays well under a megabyte
