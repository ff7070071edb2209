"""The Timeline screen driving a replay (the demo scenario through the same Protocol)."""

from __future__ import annotations

from tests_tui_helpers import loaded, screen_text
from textual.widgets import TabbedContent

from conftest import DEMO
from quotatop.collectors.base import driven_as_timeline
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.simulation.scenario_timeline import ScenarioTimeline
from quotatop.tui.app import QuotatopApp
from quotatop.tui.timeline_protocol import TimelineControl, timeline_of


def test_replay_source_and_demo_implement_the_protocol() -> None:
    from quotatop.recording.replay_source import ReplaySource

    members = [m for m in vars(TimelineControl) if not m.startswith("_")]
    assert "seek" in members and "incident_marks" in members
    missing = [m for m in members if not hasattr(ReplaySource, m)]
    assert missing == []
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    assert timeline_of(ScenarioTimeline(source)) is not None
    assert timeline_of(source) is None


def test_a_source_offers_its_timeline_through_the_protocol() -> None:
    # The App never names ScenarioSource: the source's as_timeline capability makes the
    # collector it drives; a source without it (a replay is its own timeline) is itself.
    from quotatop.recording.replay_source import ReplaySource

    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    driven = driven_as_timeline(source)
    assert isinstance(driven, ScenarioTimeline) and driven.source is source
    assert timeline_of(driven) is driven and driven.frames == source.total_steps
    assert QuotatopApp(source).collector.source is source  # type: ignore[attr-defined]
    assert not hasattr(ReplaySource, "as_timeline")
    snap = source.collect()
    plain = type("Plain", (), {"name": "plain", "collect": lambda self: snap,
                               "close": lambda self: None})()
    assert driven_as_timeline(plain) is plain and timeline_of(plain) is None


async def test_timeline_keys_step_seek_speed_pause() -> None:
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    app = QuotatopApp(source, refresh=0.05)
    tl = app.timeline
    assert tl is not None
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("space")  # pause
        await pilot.press("7")
        await pilot.pause(0.1)
        assert tl.paused
        await pilot.press("home")
        await pilot.pause(0.1)
        assert tl.position == 0
        await pilot.press("full_stop", "full_stop")
        await pilot.pause(0.1)
        assert tl.position == 2
        await pilot.press("comma")
        await pilot.pause(0.1)
        assert tl.position == 1
        assert "frame 2/10" in screen_text(app)
        await pilot.press("end")
        await pilot.pause(0.1)
        assert tl.position == 9
        assert app.snapshot is not None and app.snapshot.meta["step"] == "10"
        for _ in range(3):
            await pilot.press("plus")
        assert tl.speed == 10
        await pilot.press("minus")
        assert tl.speed == 5
        text = screen_text(app)
        assert "⏸ paused" in text and "×5" in text and "●" in text
        await pilot.press("space")
        await pilot.pause(0.1)
        assert not tl.paused


async def test_replay_keys_work_on_every_screen() -> None:
    # Issue #18: pause, step, seek and speed during a replay without going to the Timeline.
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    app = QuotatopApp(source, refresh=0.05)
    tl = app.timeline
    assert tl is not None
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("space", "5")  # pause, then the Queue
        await pilot.pause(0.1)
        assert tl.paused and app.query_one(TabbedContent).active == "queue"
        tl.seek(tl.start_time)  # a known place to step from (the demo played on)
        await pilot.press("full_stop", "full_stop", "comma")
        await pilot.pause(0.1)
        assert tl.position == 1
        await pilot.press(*["greater_than_sign"] * 4)  # 20 % of ten frames' span
        await pilot.pause(0.1)
        assert tl.position > 1
        await pilot.press(*["less_than_sign"] * 8)
        await pilot.pause(0.1)
        assert tl.position == 0
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert tl.speed == 5
        await pilot.press("left_square_bracket")
        assert tl.speed == 2
        assert app.query_one(TabbedContent).active == "queue"  # still where the user was
        await pilot.press("space")
        await pilot.pause(0.1)
        assert not tl.paused


async def test_replay_keys_on_a_live_source_say_there_is_no_replay() -> None:
    from tui_fixtures import FixedCollector, frozen_clock

    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("full_stop")
        await pilot.pause(0.1)
        assert any("no replay" in str(n.message) for n in app._notifications)


async def test_timeline_drives_a_real_recording(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import msgspec
    from tui_fixtures import T0, snapshot

    from quotatop.recording.replay_source import ReplaySource
    from quotatop.recording.store import Recorder

    path = tmp_path / "rec.qtr"
    with Recorder(path, cluster="atlas", source="fixture") as rec:
        for i in range(5):
            snap = snapshot(taken_at=T0 + 60 * i)
            snap.jobs = [msgspec.structs.replace(j) for j in snap.jobs[: 10 + i]]
            rec.append(snap)
    source = ReplaySource(path, paused=True)
    app = QuotatopApp(source, refresh=0.05)
    assert app.timeline is source
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7", "end")
        await pilot.pause(0.2)
        assert source.position == 4
        assert len(app.snapshot.jobs) == 14  # type: ignore[union-attr]
        await pilot.press("comma")
        await pilot.pause(0.2)
        assert source.position == 3 and len(app.snapshot.jobs) == 13  # type: ignore[union-attr]
        assert "frame 4/5" in screen_text(app)
