"""What the TUI holds on each path a user leaves open (issue #32), by count: the
widgets alive and the nodes on screen after 40 refreshes of a cluster whose every frame
is new are what they were after 16 (the first full turn of the screens' cycle past the
10th). bench/soak.py measures the same paths in bytes and CPU over an hour; this holds
them by count, so that it cannot depend on the machine's speed. (The charts' samples
are held to their bound by test_memory_bounds.py.)

The paths: the Overview, every screen in turn, the help and palette overlays opened
and closed, and the Report screen (m). A changing cluster: every frame has a job that
was not there before and one that ended, so each refresh derives, predicts and paints.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Awaitable, Callable

import msgspec
import pytest
from tests_tui_helpers import loaded, refreshed
from textual.pilot import Pilot
from textual.widget import Widget
from tui_fixtures import PENDING, T0, snapshot

from quotatop.collectors.model import Job, Snapshot
from quotatop.tui.app import QuotatopApp

pytestmark = pytest.mark.timeout(300)


class Changing:
    """A new frame on every collect: one job arrives, the oldest arrival leaves."""

    name = "changing"

    def __init__(self) -> None:
        self.base = snapshot()
        self.calls = 0

    def collect(self) -> Snapshot:
        self.calls += 1
        n = self.calls
        template = next(j for j in self.base.jobs if j.state == PENDING)
        arrivals = [msgspec.structs.replace(template, id=f"new{k}", name=f"arrival-{k}",
                                            submit_time=T0 + k)
                    for k in range(max(0, n - 5), n)]  # five at a time, each one new
        jobs: list[Job] = [*self.base.jobs, *arrivals]
        return msgspec.structs.replace(self.base, taken_at=T0 + 2.0 * n, jobs=jobs)

    def close(self) -> None:
        pass


def _widgets() -> int:
    gc.collect()
    return sum(isinstance(o, Widget) for o in gc.get_objects())


async def _nothing(pilot: Pilot, i: int) -> None:
    return None


async def _screens(pilot: Pilot, i: int) -> None:
    await pilot.press("12345678"[i % 8])


async def _overlays(pilot: Pilot, i: int) -> None:
    await pilot.press("question_mark" if i % 2 == 0 else "ctrl+p")
    await pilot.pause()
    overlay = weakref.ref(pilot.app.screen)
    await pilot.press("escape")
    await _freed(pilot, overlay)


async def _freed(pilot: Pilot, overlay: weakref.ref[object], tries: int = 100) -> None:
    """Bounded wait until a closed overlay is gone. Textual stops a closed screen's
    timers by cancelling their tasks, and a cancelled task holds the screen until the
    loop runs it once more: counting before that counted one palette that was on its
    way out (a race seen in CI: 96 then 97 widgets). One never freed is a leak."""
    for _ in range(tries):
        gc.collect()
        if overlay() is None:
            return
        await pilot.pause(0.01)
    raise AssertionError(f"a closed {type(overlay()).__name__} was never freed")


async def _report_once(pilot: Pilot, i: int) -> None:
    if i == 0:
        await pilot.press("m")


PATHS: dict[str, Callable[[Pilot, int], Awaitable[None]]] = {
    "overview": _nothing, "screens": _screens, "overlays": _overlays, "report": _report_once,
}


@pytest.mark.parametrize("path", list(PATHS))
async def test_forty_refreshes_hold_what_sixteen_held(path: str) -> None:
    source = Changing()
    app = QuotatopApp(source, refresh=3600.0)  # refreshed here, not by its timer
    step = PATHS[path]
    counts: list[tuple[int, int]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        for i in range(40):
            await step(pilot, i)
            await refreshed(pilot)
            if i + 1 in (16, 40):  # the same place in the screens' cycle (i % 8)
                counts.append((_widgets(), len(list(app.screen.walk_children()))))
        assert source.calls >= 40
    (widgets_10, nodes_10), (widgets_40, nodes_40) = counts
    assert nodes_40 == nodes_10, counts
    assert widgets_40 <= widgets_10, counts
