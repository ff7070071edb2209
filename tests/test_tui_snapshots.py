"""SVG snapshots of every screen on the fixed fixture, frozen clock.
Regenerate after a deliberate change: pytest tests/test_tui_snapshots.py --snapshot-update"""

from __future__ import annotations

import pytest
from tests_tui_helpers import loaded
from tui_fixtures import FixedCollector, frozen_clock

from conftest import DEMO
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.app import QuotatopApp

SCREENS = [("1", "overview"), ("2", "quota"), ("3", "priority"), ("4", "elastic"),
           ("5", "queue"), ("6", "nodes"), ("8", "incidents")]


@pytest.fixture(autouse=True)
def _source_estimates_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # Snapshots pin this UI's rendering; the core's answers have their own tests.
    from quotatop import scheduler_core

    monkeypatch.delattr(scheduler_core, "predict", raising=False)


def fixture_app() -> QuotatopApp:
    return QuotatopApp(FixedCollector(), refresh=3600, clock=frozen_clock,
                       theme="textual-dark")


@pytest.mark.parametrize(("key", "name"), SCREENS, ids=[n for _, n in SCREENS])
def test_screen_100x30(snap_compare, key: str, name: str) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press(key)
        await pilot.pause(0.1)

    assert snap_compare(fixture_app(), terminal_size=(100, 30), run_before=ready)


# Issue #18: every screen at the two sizes a user brings, the smallest terminal and a
# large one (columns fitted to the width, the height used). The Overview's are below and
# in tests/test_tui_chart_snapshots.py: its charts draw the app's own history, which
# these fixtures' prediction worker may or may not have added a sample to.
SIZED = [s for s in SCREENS if s[1] != "overview"]


@pytest.mark.parametrize(("key", "name"), SIZED, ids=[n for _, n in SIZED])
@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_screen_at_both_sizes(snap_compare, key: str, name: str,  # type: ignore[no-untyped-def]
                              size: tuple[int, int]) -> None:
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press(key)
        await pilot.pause(0.1)

    assert snap_compare(fixture_app(), terminal_size=size, run_before=ready)


def test_overview_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)

    assert snap_compare(fixture_app(), terminal_size=(80, 24), run_before=ready)


def test_help_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.1)

    assert snap_compare(fixture_app(), terminal_size=(80, 24), run_before=ready)


def test_timeline_paused_demo(snap_compare) -> None:  # type: ignore[no-untyped-def]
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    app = QuotatopApp(source, refresh=3600, clock=lambda: 0.0, theme="textual-dark")

    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("space", "7", "end", "comma", "comma", "plus", "plus")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(100, 30), run_before=ready)


def test_quota_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The narrowest supported terminal: the team table fits without a sideways
    scroll (share dropped, named under it) and every QoS row shows."""
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause(0.1)

    assert snap_compare(fixture_app(), terminal_size=(80, 24), run_before=ready)

