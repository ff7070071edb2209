"""Live extras of the TUI: R records the session into a recording that
quotatop.recording.store opens, and incidents detected live show on the Overview,
the Incidents screen and the Timeline."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import msgspec
import pytest
from tests_tui_helpers import loaded, screen_text
from textual.widgets import DataTable
from tui_fixtures import NOW, T0, FixedCollector, frozen_clock, snapshot

from conftest import DEMO
from quotatop.recording.store import Recording
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.app import QuotatopApp
from quotatop.tui.live_recording import LiveRecording, default_record_dir, recording_name


class Ticking(FixedCollector):
    """A new snapshot (time moves on, one job fewer) on every collect."""

    def collect(self) -> msgspec.Struct:
        self.calls += 1
        base = snapshot()
        return msgspec.structs.replace(base, taken_at=T0 + self.calls,
                                       jobs=base.jobs[: max(1, len(base.jobs) - self.calls)])


async def _until(pilot, cond, tries: int = 150) -> None:  # type: ignore[no-untyped-def]
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.02)


async def test_r_records_the_frames_seen_and_stops(tmp_path: Path) -> None:
    seen: list[float] = []
    app = QuotatopApp(Ticking(), refresh=0.05, clock=frozen_clock, record_dir=tmp_path / "rec")
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("R")
        await _until(pilot, lambda: app.recording.frames >= 4)
        path = app.recording.path
        assert path is not None and path.parent == tmp_path / "rec"
        assert path.name == recording_name("atlas", NOW)
        assert f"● REC {path.name}" in screen_text(app)
        await pilot.press("space")  # pause so the frames on screen stop moving
        await pilot.pause(0.2)
        seen.append(app.snapshot.taken_at)  # type: ignore[union-attr]
        await pilot.press("R")
        await _until(pilot, lambda: not app.recording.active)
        await pilot.pause()
        assert "● REC" not in screen_text(app)
        frames = app.recording.frames
    with Recording(path) as rec:
        assert len(rec) == frames >= 4
        assert rec.meta["cluster"] == "atlas"
        times = rec.times
        assert times == sorted(times) and len(set(times)) == len(times)
        assert times[-1] == seen[0]  # the last frame recorded is the one left on screen
        last = rec.frame(-1)
        assert len(last.jobs) == max(1, len(snapshot().jobs) - int(last.taken_at - T0))


async def test_one_collect_at_a_time_through_its_whole_tail(tmp_path: Path) -> None:
    """A collect ends only after it has fed incidents and the recording. When the next
    collect could start at paint time, two tails overlapped and a recording got its
    frames out of order (15, 17, 16) under load; a slow incident feed makes that
    overlap certain, so this fails at once if the release moves back to paint time."""
    app = QuotatopApp(Ticking(), refresh=0.02, clock=frozen_clock, record_dir=tmp_path / "rec")
    inside, most = 0, 0
    lock = threading.Lock()
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        feed = app.live_incidents.feed

        def slow_feed(snap):  # type: ignore[no-untyped-def]
            nonlocal inside, most
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.08)
            with lock:
                inside -= 1
            return feed(snap)

        app.live_incidents.feed = slow_feed  # type: ignore[method-assign]
        await pilot.press("R")
        await _until(pilot, lambda: app.recording.frames >= 6, tries=400)
        path = app.recording.path
        await pilot.press("R")
        await _until(pilot, lambda: not app.recording.active)
    assert most == 1
    with Recording(path) as rec:
        times = rec.times
    assert len(times) >= 6 and times == sorted(times) and len(set(times)) == len(times)


def test_the_frame_on_screen_is_recorded_once(tmp_path: Path) -> None:
    """R records the snapshot on screen; the collect that painted it may offer it
    again a moment later, and it is not recorded twice."""
    rec = LiveRecording(tmp_path, clock=frozen_clock)
    on_screen = snapshot(taken_at=T0 + 1)
    rec.start(on_screen, "test")
    rec.append(on_screen)
    rec.append(snapshot(taken_at=T0 + 2))
    path = rec.path
    rec.stop()
    assert rec.error is None
    with Recording(path) as r:
        assert r.times == [T0 + 1, T0 + 2]


async def test_recording_error_is_a_banner_not_a_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock, record_dir=blocker)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("R")
        await _until(pilot, lambda: app.recording.error is not None)
        await pilot.pause()
        assert not app.recording.active
        assert "cannot record to" in screen_text(app)


def test_record_dir_defaults_to_xdg_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_record_dir() == tmp_path / "quotatop"
    assert recording_name("a b/c", 0).startswith("a_b_c-")


async def test_live_overcommit_opens_shows_and_closes() -> None:
    over = snapshot(taken_at=T0)
    over.teams[1].guarantee = {"gpu": 40.0}  # 96 granted on 80 GPUs
    fair = snapshot(taken_at=T0 + 30)
    fair.teams[1].guarantee = {"gpu": 16.0}  # 72 granted on the 72 GPUs that can run jobs
    app = QuotatopApp(FixedCollector(over), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await _until(pilot, lambda: bool(app.incident_state.open))
        await pilot.pause()
        assert [i.kind for i in app.incident_state.open] == ["overcommit"]
        text = screen_text(app)
        assert "over-commit" in text.split("Open incidents")[1]
        assert "▲ 1 incident" in text
        await pilot.press("8")
        await pilot.pause()
        table = app.query_one("#inc-table", DataTable)
        row = [str(c) for c in table.get_row_at(0)]
        assert row[0] == "open" and row[1] == "over-commit"
        assert "exp" in row[4] and row[6] and row[7] != "—"  # summary and remedy
        app.collector.snaps = [fair]  # type: ignore[attr-defined]
        app.refresh_now()
        await _until(pilot, lambda: not app.incident_state.open)
        await pilot.pause()
        closed = app.incident_state.closed
        assert [i.closed_at for i in closed] == [T0 + 30]
        assert "closed" in str(table.get_row_at(0)[0])
        await pilot.press("7")
        await pilot.pause()
        assert "overcommit:" in screen_text(app)  # the live Timeline list


async def test_demo_scenario_incidents_mark_the_timeline() -> None:
    source = ScenarioSource(load_scenario(DEMO / "overcommit.toml"), loop=False)
    app = QuotatopApp(source, refresh=60, clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await _until(pilot, lambda: bool(app.incident_state.open))
        assert "overcommit" in {i.kind for i in app.incident_state.open}
        await pilot.press("7")
        await pilot.pause()
        marks = app.timeline.incident_marks()  # type: ignore[union-attr]
        assert any(m.title.startswith("overcommit:") for m in marks)
        listed = screen_text(app).split("Incidents\n")[-1]
        assert "▲" in listed and "overcommit:" in listed
