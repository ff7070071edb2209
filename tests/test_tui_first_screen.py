"""The first screen plays the bundled demo scenario: per team cap, used, queued."""

from __future__ import annotations

from textual.widgets import DataTable

from conftest import DEMO
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.app import QuotatopApp


async def test_demo_plays_and_q_quits() -> None:
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    app = QuotatopApp(source, refresh=0.05)
    async with app.run_test() as pilot:
        for _ in range(200):  # bounded: the demo has ten steps
            await pilot.pause(0.05)
            if source.position == source.total_steps - 1 and app.snapshot is not None \
                    and app.snapshot.meta["step"] == "10":
                break
        table = app.query_one("#teams", DataTable)
        names = {str(table.get_row_at(i)[0]) for i in range(table.row_count)}
        assert names == {"alpha", "beta", "gamma"}

        def cap_used_queued(team: str) -> list[str]:
            # The scenario's cap is a max (no guarantee); queued is pending demand.
            return [str(table.get_cell(team, k)) for k in ("max", "used", "queued")]

        # After the seed's ten steps: alpha 24/24, beta 4 with nothing queued, gamma 12.
        assert cap_used_queued("alpha") == ["24", "24", "0"]
        assert cap_used_queued("beta") == ["16", "4", "0"]
        assert cap_used_queued("gamma") == ["16", "12", "0"]
        # At 80 columns (run_test's size) "no guarantee (demo)" is said shortly, so the
        # queued demand and the trend keep their columns (tui/views/overview.py).
        assert str(table.get_cell("alpha", "guarantee")) == "— (demo)"
        await pilot.press("q")
    assert app.return_code == 0 or app.return_code is None


async def test_space_pauses_the_timeline() -> None:
    source = ScenarioSource(load_scenario(DEMO / "seed_fifo.toml"), loop=False)
    app = QuotatopApp(source, refresh=0.05)
    async with app.run_test() as pilot:
        await pilot.pause(0.1)
        await pilot.press("space")
        await pilot.pause(0.1)
        held = source.position
        await pilot.pause(0.3)
        assert source.position == held
        await pilot.press("space")
        await pilot.pause(0.3)
        assert source.position > held or source.position == source.total_steps - 1
