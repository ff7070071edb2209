"""The refresh pipeline alone (tui/session.py), without Textual: a real demo scenario
driven through refreshes, the events it reports and their order, a failing source,
the core's prediction, an unchanged live frame and a recording."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from conftest import DEMO
from quotatop.collectors.model import Snapshot
from quotatop.recording.store import Recording
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.predictions import core_available
from quotatop.tui.session import (
    Collected,
    Failed,
    Finished,
    IncidentsFound,
    Predicted,
    PredictionWanted,
    RecordingChanged,
    Session,
    SessionEvent,
    Unchanged,
)

ROOT = Path(__file__).resolve().parents[1]


def _demo() -> ScenarioSource:
    return ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)


def _kinds(events: list[SessionEvent]) -> list[type]:
    return [type(e) for e in events]


class _FailsAfter:
    """A demo source that raises from its ``n``-th collect on."""

    name = "flaky"

    def __init__(self, n: int) -> None:
        self.inner = _demo().as_timeline()
        self.n = n

    def collect(self) -> Snapshot:
        self.n -= 1
        if self.n < 0:
            raise ConnectionError("slurmctld went away")
        return self.inner.collect()


class _Repeats:
    """A live viewer between its poller's frames: the same items handed back."""

    name = "live"
    repeats_items = True

    def __init__(self) -> None:
        self.snap = _demo().collect()

    def collect(self) -> Snapshot:
        return self.snap


def test_two_refreshes_report_new_data_then_incidents_then_the_end_in_order() -> None:
    events: list[SessionEvent] = []
    session = Session(_demo(), emit=events.append)
    assert session.timeline is not None  # the demo is driven as a replay

    session.refresh()
    session.refresh()

    assert _kinds(events) == [Collected, PredictionWanted, IncidentsFound, Finished] * 2
    first, second = events[0], events[4]
    assert isinstance(first, Collected) and isinstance(second, Collected)
    assert second.snap.taken_at > first.snap.taken_at  # the replay moved one frame on
    assert {t.name for t in first.derived.teams} == {t.name for t in first.snap.teams}
    assert session.snapshot is second.snap


def test_a_failing_source_reports_its_reason_and_keeps_the_last_good_snapshot() -> None:
    events: list[SessionEvent] = []
    session = Session(_FailsAfter(1), emit=events.append)

    session.refresh()
    good = session.snapshot
    session.refresh()

    assert _kinds(events) == [Collected, PredictionWanted, IncidentsFound, Finished,
                              Failed, Finished]
    failed = events[4]
    assert isinstance(failed, Failed)
    assert failed.reason == "ConnectionError: slurmctld went away"
    assert good is not None and session.snapshot is good


def test_an_unchanged_live_frame_is_reported_as_such_not_derived_again() -> None:
    events: list[SessionEvent] = []
    session = Session(_Repeats(), emit=events.append)

    session.refresh()
    session.refresh()

    assert _kinds(events) == [Collected, PredictionWanted, IncidentsFound, Finished,
                              Unchanged, Finished]


@pytest.mark.skipif(not core_available(), reason="the scheduling core is not built")
def test_the_newest_snapshot_goes_to_the_core_once_and_its_answer_is_reported() -> None:
    events: list[SessionEvent] = []
    session = Session(_demo(), emit=events.append)
    for _ in range(6):  # six snapshots before the core is asked: only the newest goes
        session.refresh()

    box = session.next_prediction()
    assert box is not None and box[0] is session.snapshot
    pending = {j.id for j in box[0].jobs if j.state == "pending"}
    assert pending  # the sixth frame of the demo queues two jobs
    assert session.predicting and session.next_prediction() is None  # one at a time
    preds = session.predict(box)

    assert isinstance(events[-1], Predicted) and events[-1].predictions is preds
    assert preds.error is None and set(preds.by_id) == pending
    assert box == []  # emptied once encoded: the core holds no snapshot for its run
    assert not session.prediction_waiting
    assert session.predicting  # until the answer is on screen
    session.prediction_shown()
    assert not session.predicting
    assert session.next_prediction() is None  # nothing newer to answer
    session.refresh()
    assert session.prediction_waiting and session.next_prediction() is not None


def test_recording_follows_the_refreshes_and_is_reported(tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    session = Session(_demo(), emit=events.append, record_dir=tmp_path)
    session.refresh()
    session.record_start()  # from the snapshot shown
    session.refresh()
    path = session.recording.path
    session.record_stop()

    assert _kinds(events)[4] is RecordingChanged and _kinds(events)[-1] is RecordingChanged
    assert path is not None and not session.recording.active
    with Recording(path) as rec:
        assert len(rec.seqs) == 2


def test_pause_is_the_timelines_for_a_replay_and_the_sessions_own_otherwise() -> None:
    replay = Session(_demo())
    assert not replay.paused
    replay.toggle_pause()
    assert replay.paused and replay.timeline is not None and replay.timeline.paused

    live = Session(_Repeats())
    live.toggle_pause()
    assert live.paused and live.timeline is None


def test_the_session_loads_without_textual() -> None:
    code = ("import sys, quotatop.tui.session; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


class _Idle:
    """An idle live cluster: every collect a new snapshot, taken later, saying the
    same (as the Slurm source gives one between job events)."""

    name = "idle"

    def __init__(self) -> None:
        self.base = _demo().collect()
        self.n = 0

    def collect(self) -> Snapshot:
        self.n += 1
        copy = msgspec.msgpack.decode(msgspec.msgpack.encode(self.base), type=Snapshot)
        return msgspec.structs.replace(copy, taken_at=self.base.taken_at + self.n)


def test_an_idle_cluster_is_derived_predicted_and_painted_once(tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    source = _Idle()
    session = Session(source, emit=events.append, record_dir=tmp_path)
    session.refresh()
    shown = session.snapshot
    session.record_start()
    for _ in range(3):
        session.refresh()
    path = session.recording.path
    session.record_stop()

    kinds = _kinds(events)
    assert kinds.count(Collected) == 1 and kinds.count(PredictionWanted) == 1
    assert kinds.count(Unchanged) == 3
    assert shown is not None and session.snapshot is not None
    # The objects on screen are kept (the new ones are let go) with the new moment.
    assert session.snapshot.jobs is shown.jobs
    assert session.snapshot.taken_at == source.base.taken_at + 4
    assert path is not None
    with Recording(path) as rec:  # the recording still gets every frame
        assert len(rec.seqs) == 4


def test_a_change_anywhere_in_the_cluster_is_new_data() -> None:
    events: list[SessionEvent] = []
    source = _Idle()
    session = Session(source, emit=events.append)
    session.refresh()
    job = source.base.jobs[0]
    source.base = msgspec.structs.replace(source.base, jobs=[
        msgspec.structs.replace(j, priority=(j.priority or 0) + 1) if j is job else j
        for j in source.base.jobs])
    session.refresh()
    assert _kinds(events).count(Collected) == 2


def test_a_replays_frames_are_not_compared() -> None:
    """A timeline's frame is its clock (the cursor, a replay's "now"): equal content at
    a later frame is still a frame to show, so no digest is taken."""
    session = Session(_demo())
    for _ in range(2):
        session.refresh()
    assert session.timeline is not None and session._digest is None


class _Counts:
    """A live source that counts its collects (each one a round of cluster commands)."""

    name = "counted"

    def __init__(self) -> None:
        self.collects = 0
        self.snap = _demo().collect()

    def collect(self) -> Snapshot:
        self.collects += 1
        return msgspec.structs.replace(self.snap, taken_at=self.snap.taken_at + self.collects)


def test_the_snapshot_taken_before_the_tui_started_is_its_first_frame() -> None:
    # quotatop/tui_launch.py collects once to refuse an unreachable cluster: that
    # answer is shown, not asked for a second time.
    source = _Counts()
    first = msgspec.structs.replace(source.snap, cluster="taken-at-launch")
    events: list[SessionEvent] = []
    session = Session(source, emit=events.append, first=first)

    session.refresh()
    assert source.collects == 0
    shown = events[0]
    assert isinstance(shown, Collected) and shown.snap.cluster == "taken-at-launch"

    session.refresh()  # from then on, the source
    assert source.collects == 1
    assert session.snapshot is not None and session.snapshot.cluster != "taken-at-launch"
