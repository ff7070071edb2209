"""An empty panel says what is empty and why, never a bare header."""

from __future__ import annotations

from tests_tui_helpers import loaded, screen_text
from textual.widgets import DataTable, Static
from tui_fixtures import NOW, FixedCollector, frozen_clock

from quotatop.collectors.model import Node, Snapshot, Team
from quotatop.tui.app import QuotatopApp


def bare() -> Snapshot:
    """A source with teams (max only, no guarantee), nodes, and nothing else."""
    return Snapshot(taken_at=NOW, source="slurm",
                    teams=[Team(name="a", max={"gpu": 8.0}), Team(name="b", max={"gpu": 8.0})],
                    nodes=[Node(name="n1", capacity={"gpu": 8.0})])


async def test_empty_panels_say_what_is_empty_and_why() -> None:
    app = QuotatopApp(FixedCollector(bare()), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert not app.query_one("#qos-table", DataTable).display
        assert str(app.query_one("#qos-empty", Static).content).startswith(
            "no QoS limits: slurm reports no QoS")
        await pilot.press("3")
        await pilot.pause()
        legend = str(app.query_one("#legend", Static).content)
        assert legend.startswith("no pending jobs: every job the source reports is running")
        assert not app.query_one("#fairshare", DataTable).display
        assert str(app.query_one("#fairshare-empty", Static).content).startswith(
            "no fair-share state: slurm reports none")
        assert "none: no QoS of this source preempts another" in \
            str(app.query_one("#preempt", Static).content)
        await pilot.press("4")
        await pilot.pause()
        reclaim = app.query_one("#reclaim", DataTable)
        assert [str(c) for c in reclaim.get_row_at(0)[1:3]] == [
            "nothing to reclaim", "no team has a guarantee here, so none lends or borrows"]
        await pilot.press("5")
        await pilot.pause()
        assert "no jobs: the source reports none running or pending" in screen_text(app)


def test_nothing_to_reclaim_says_whether_no_one_borrows_or_no_one_can() -> None:
    from quotatop.tui.derive import derive
    from quotatop.tui.predictions import Predictions
    from quotatop.tui.views.base import ViewData
    from quotatop.tui.views.elastic import reclaim_layout

    def why(snap: Snapshot) -> list[str]:
        _, rows = reclaim_layout(ViewData(snap, derive(snap), Predictions(), NOW))
        return [str(c) for c in rows[0][1:3]]

    within = bare()
    within.teams = [Team(name="a", guarantee={"gpu": 4.0}, max={"gpu": 8.0}),
                    Team(name="b", guarantee={"gpu": 4.0}, max={"gpu": 8.0})]
    assert why(within) == ["nothing to reclaim",
                           "no team borrows now: every team is within its guarantee"]
    assert why(bare()) == ["nothing to reclaim",
                           "no team has a guarantee here, so none lends or borrows"]
