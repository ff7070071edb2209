"""Priority's bars are the scheduler's own factors: sprio's FAIRSHARE 6667 and QOS 10000
draw as 6667 and 10000 on one scale for every row, even when the core's recomputation
of them differs; the core's are drawn only where the source gives none."""

from __future__ import annotations

from tests_tui_helpers import loaded
from tui_fixtures import NOW, FixedCollector, frozen_clock

from quotatop.collectors.model import PENDING, Job, PriorityFactors, Snapshot
from quotatop.tui.app import QuotatopApp
from quotatop.tui.predictions import CoreAnswers, Predictions
from quotatop.tui.views.priority import FACTOR_BAR, FactorSource, factor_bar
from quotatop.tui.widgets.pending_list import PendingList


def pend(jid: str, priority: float, factors: PriorityFactors | None) -> Job:
    return Job(id=jid, team="t", qos="normal", state=PENDING, request={"gpu": 1.0},
               submit_time=NOW - 60, priority=priority, factors=factors)


SPRIO = [pend("1", 16667, PriorityFactors(fairshare=6667, qos=10000)),
         pend("2", 3000, PriorityFactors(age=1000, fairshare=2000))]
# The core weighs the same jobs its own way (fair-share ×11, QoS ×2 of sprio's).
CORE = Predictions(CoreAnswers.from_entries([
    {"job_id": "1", "factors": {"fairshare": 73337.0, "qos": 20000.0}},
    {"job_id": "2", "factors": {"age": 10.0, "fairshare": 22000.0}}]))


def cells(bar: str) -> dict[str, int]:
    return {g: bar.count(g) for g in "█▓▒░▚" if bar.count(g)}


def test_source_factors_win_over_the_cores_on_one_scale() -> None:
    src = FactorSource(SPRIO, CORE)
    assert src.from_source and src.top == 16667
    one, two = (factor_bar(src.values(j) or [], src.top).plain for j in SPRIO)
    # 6667 / 16667 of 28 cells is 11, 10000 / 16667 is 17; job 2 on the same scale.
    assert cells(one) == {"▓": round(6667 / 16667 * FACTOR_BAR),
                          "▒": round(10000 / 16667 * FACTOR_BAR)} == {"▓": 11, "▒": 17}
    assert cells(two) == {"█": 2, "▓": 3}
    assert "sprio" in src.words("slurm")


def test_the_cores_factors_are_drawn_only_where_the_source_has_none() -> None:
    bare = [pend("1", 0, None), pend("2", 0, None)]
    src = FactorSource(bare, CORE)
    assert not src.from_source and src.top == 93337
    assert cells(factor_bar(src.values(bare[1]) or [], src.top).plain) == {"▓": 7}
    assert "core computes" in src.words("k8s")
    assert "no priority factors" in FactorSource(bare, Predictions()).words("k8s")


async def test_the_priority_screen_draws_sprio_and_labels_rank_and_order() -> None:
    snap = Snapshot(taken_at=NOW, source="slurm", jobs=list(SPRIO))
    app = QuotatopApp(FixedCollector(snap), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("3")
        await pilot.pause()
        plist = app.query_one(PendingList)
        assert plist.header[0][0] == "rank"
        first = plist.row_text(0)
        assert first.split()[:2] == ["1", "1"]  # rank 1 is job 1, the highest priority
        scale = plist.bar_width / 16667
        assert cells(first) == {"▓": round(6667 * scale), "▒": round(10000 * scale)}
