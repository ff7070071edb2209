"""SVG snapshots of the charts (issue #18) at 80×24 and 200×50, on a bundled
scenario paused at a fixed frame. Regenerate after a deliberate change:
pytest tests/test_tui_chart_snapshots.py --snapshot-update"""

from __future__ import annotations

import pytest
from tests_tui_helpers import loaded

from conftest import DEMO
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.app import QuotatopApp


@pytest.fixture(autouse=True)
def _no_predict_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scenario's frames need the core (its playback predicts each frame); the
    # app's own predict worker answers whenever it finishes, which no SVG can pin.
    import quotatop.tui.session

    monkeypatch.setattr(quotatop.tui.session, "core_available", lambda: False)


def _storm_app() -> QuotatopApp:
    source = ScenarioSource(load_scenario(DEMO / "queue_storm.toml"), loop=False)
    return QuotatopApp(source, refresh=3600, clock=lambda: 0.0, theme="textual-dark")


async def _storm_at_frame(pilot, then: str) -> None:  # type: ignore[no-untyped-def]
    """queue_storm paused at frame 17 (the storm and its queue drain in view), every
    frame before it shown once: the charts' data is fixed. Then key ``then``."""
    await loaded(pilot)
    await pilot.press("space", "7")
    for _ in range(16):
        await pilot.press("full_stop")
        for _ in range(200):  # bounded: until the step's collect has painted
            await pilot.pause(0.02)
            if not pilot.app._collecting:
                break
    await pilot.press(then)
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_overview_charts(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    """The Overview at both ends: the rows the table leaves hold the charts."""
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await _storm_at_frame(pilot, "1")

    assert snap_compare(_storm_app(), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_timeline_charts(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    """Usage and queue depth under the incident marks, over the replay's span."""
    async def ready(pilot):  # type: ignore[no-untyped-def]
        await _storm_at_frame(pilot, "7")

    assert snap_compare(_storm_app(), terminal_size=size, run_before=ready)
