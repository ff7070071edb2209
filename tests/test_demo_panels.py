"""Every bundled demo fills what it is there to show: the fair-share tree (the core's
numbers, never a column of dashes), borrowing and the reclaim order, the core's
preemption, and its incidents. The default demo tours the article's three modes and
has incidents. One table of what each scenario teaches, checked frame by frame."""

from __future__ import annotations

from functools import cache

import pytest
from tests_tui_helpers import loaded, screen_text
from textual.widgets import DataTable, Static
from tui_fixtures import FixedCollector

from conftest import DEMO
from quotatop.collectors.model import Snapshot
from quotatop.incidents import detect_incidents
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_playback import EPOCH
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.sources import DEFAULT_SCENARIO
from quotatop.tui.app import QuotatopApp
from quotatop.tui.derive import reclaim_order, team_rows
from quotatop.tui.predictions import predict
from quotatop.tui.views.priority import has_fairshare

# What each bundled scenario shows, filled, at some frame.
TEACHES = {
    "tour": {"fairshare", "borrow", "reclaim", "preemption", "queue_storm", "starvation"},
    "split_60_30_10": {"fairshare", "borrow", "reclaim", "preemption"},
    "qos_preemption": {"fairshare", "preemption"},
    "starvation_aging": {"fairshare", "starvation"},
    "queue_storm": {"fairshare", "queue_storm"},
    "queue_storm_maxsubmit": {"fairshare"},
    "overcommit": {"fairshare", "borrow", "reclaim", "preemption", "overcommit"},
    "fragmentation": {"fairshare", "fragmentation"},
}


@cache
def frames(name: str) -> tuple[Snapshot, ...]:
    return tuple(ScenarioSource(load_scenario(DEMO / f"{name}.toml"), loop=False).snapshots())


def shown(name: str) -> set[str]:
    snaps = frames(name)
    out = {i.kind for i in detect_incidents(snaps)}
    if all(has_fairshare(s) for s in snaps):
        out.add("fairshare")
    for s in snaps:
        rows = team_rows(s)
        if any(r.borrowed > 0 for r in rows):
            out.add("borrow")
        if reclaim_order(s, rows):
            out.add("reclaim")
        # The Preemption panel's answer: the core's, on the frame before a preemption.
        if s.meta.get("moment") == "before preemption":
            preds = predict(s)
            if any(preds.get(j).preempts for j in s.jobs if j.state == "pending"):
                out.add("preemption")
    return out


def test_every_bundled_scenario_is_in_the_table() -> None:
    assert {p.stem for p in DEMO.glob("*.toml")} - {"seed_fifo"} == set(TEACHES)


@pytest.mark.parametrize("name", sorted(TEACHES))
def test_each_demo_fills_what_it_teaches(name: str) -> None:
    missing = TEACHES[name] - shown(name)
    assert not missing, f"{name} never shows {sorted(missing)}"


def test_the_default_demo_tours_the_three_modes_and_has_incidents() -> None:
    assert DEFAULT_SCENARIO.stem == "tour"
    teaches = TEACHES["tour"]
    assert {"borrow", "reclaim", "preemption", "fairshare"} <= teaches  # the three modes
    assert {"queue_storm", "starvation"} <= teaches
    # The 60-30-10 split itself: three guarantees adding up to the 100 GPUs.
    s = frames("tour")[0]
    assert sorted((t.name, (t.guarantee or {}).get("gpu")) for t in s.teams) == \
        [("elastic", 10.0), ("exp", 30.0), ("prod", 60.0)]
    assert sum(n.capacity["gpu"] for n in s.nodes) == 100


def before_preemption(name: str, t: float) -> Snapshot:
    return next(s for s in frames(name)
                if s.meta.get("moment") == "before preemption" and s.taken_at == EPOCH + t)


def preempted_next(name: str, t: float) -> set[str]:
    """The jobs the demo's own run preempts at ``t``: running on the frame before the
    preemption, no longer running on the next one at the same instant."""
    snaps = frames(name)
    k = snaps.index(before_preemption(name, t))
    running = {j.id for j in snaps[k].jobs if j.state == "running"}
    return running - {j.id for j in snaps[k + 1].jobs if j.state == "running"}


@pytest.mark.parametrize(("name", "t", "preemptor", "victims"), [
    ("qos_preemption", 100, "serve (serving, qos high, 8 gpu)", ["be-4", "be-3"]),
    ("tour", 300, "serve (prod, qos high, 4 gpu)", ["el-10", "el-9"]),
])
async def test_priority_screen_fills_preemption_and_the_fairshare_tree(
        name: str, t: float, preemptor: str, victims: list[str]) -> None:
    # The panel names the victims the demo's next frame preempts: the TUI predicts under
    # the demo's own policy, which the frames carry (meta core_policy).
    assert set(victims) == preempted_next(name, t)
    app = QuotatopApp(FixedCollector(before_preemption(name, t)), refresh=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("3")
        panel = ""
        for _ in range(60):  # the core's answer lands after the first paint
            await pilot.pause(0.05)
            panel = str(app.query_one("#preempt", Static).content)
            if "would preempt" in panel:
                break
        assert f"{preemptor} would preempt, in order:" in panel
        assert [line.split()[0] for line in panel.splitlines()[2:2 + len(victims)]] == victims
        tree = app.query_one("#fairshare", DataTable)
        assert tree.display and tree.row_count == len(app.data.snap.teams)
        assert not app.query_one("#fairshare-empty", Static).display
        assert "—" not in "".join(str(c) for r in range(tree.row_count)
                                  for c in tree.get_row_at(r)[1:])


async def test_the_default_demo_shows_its_queue_storm_on_the_overview() -> None:
    snaps = [s for s in frames("tour") if s.taken_at <= EPOCH + 2100]
    app = QuotatopApp(FixedCollector(*snaps), refresh=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        text = ""
        for _ in range(200):
            await pilot.pause(0.05)
            text = str(app.query_one("OverviewView #incidents", Static).content)
            if "queue storm" in text or "queue_storm" in text:
                break
        assert "exp" in text and ("queue storm" in text or "queue_storm" in text), \
            screen_text(app)
