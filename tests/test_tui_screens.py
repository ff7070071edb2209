"""Pilot tests: every screen on the fixed fixture, and every key."""

from __future__ import annotations

import msgspec
import pytest
from tests_tui_helpers import loaded, screen_text
from textual.binding import Binding
from textual.command import CommandPalette
from textual.widgets import TabbedContent
from tui_fixtures import NOW, BrokenCollector, FixedCollector, frozen_clock, snapshot

from collectors.model import Job
from tui.app import QuotatopApp
from tui.keys import KEYS
from tui.modals import HelpScreen, JobDetailScreen
from tui.views.queue import QueueView
from tui.views.timeline import TimelineView
from tui.widgets.job_table import JobTable


def make_app(*snaps, refresh: float = 60.0) -> QuotatopApp:
    return QuotatopApp(FixedCollector(*snaps), refresh=refresh, clock=frozen_clock)


async def test_number_keys_switch_screens() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        for key, vid in zip("2345671", ("quota", "priority", "elastic", "queue", "nodes",
                                        "timeline", "overview"), strict=True):
            await pilot.press(key)
            await pilot.pause()
            assert app.query_one(TabbedContent).active == vid


async def test_overview_shows_teams_meter_and_no_guarantee() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        text = screen_text(app)
        assert "used 66 · free 2 · stranded 12 of 80" in text
        assert "no guarantee (Slurm)" in text
        assert "2 ← prod" in text  # elastic borrows 2 from prod
        assert "2 → elastic" in text
        assert "atlas" in text and "refreshed 0s ago" in text
        assert "125%" in text  # elastic at 10 of its 8 guarantee


async def test_quota_over_commit_warning_only_when_quotas_exceed_cluster() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "over-committed" not in text
        assert "prod 48 (60%)  exp 24 (30%)  elastic 8 (10%)" in text
        assert "hpc: no guarantee (Slurm), max 16 only" in text
    snap = snapshot()
    snap.teams[1].guarantee = {"gpu": 40.0}
    app = make_app(snap)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert "over-committed: quotas add up to 96 gpu but the cluster has 80" in \
            screen_text(app)


async def test_priority_orders_pending_and_names_preemption_victims() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("3")
        await pilot.pause()
        text = screen_text(app)
        order = [text.index(f" {j} ") for j in ("2001", "2006", "2005", "2002", "2003", "2004")]
        assert order == sorted(order)
        assert "2001 (prod, qos high, 16 gpu) would preempt" in text
        # scavenger (QoS priority 0) goes before low (10); Guaranteed prod jobs never.
        assert text.index("1010") < text.index("1009")
        assert "1001" not in text.split("would preempt")[1]


async def test_elastic_shows_borrowing_and_reclaim_order() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        assert "10 · g 8 · max 32" in text
        assert "prod 2" in text  # elastic borrows from prod
        reclaim = text.split("Reclaimed first")[1]
        assert "1010" in reclaim


async def test_queue_filter_sort_and_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler_core

    monkeypatch.delattr(scheduler_core, "predict", raising=False)  # the source's own words
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("slash")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "queue"
        await pilot.press(*"team:exp state:pend")
        await pilot.press("enter")
        await pilot.pause()
        table = app.query_one(JobTable)
        assert [j.id for j in table.rows] == ["2002", "2003"]
        assert "2 of 17 jobs" in screen_text(app)
        assert "user at the QoS per-user GPU limit" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert len(table.rows) == 17
        for _ in range(6):  # sort key: None → id → user → team → qos → state → amount
            await pilot.press("s")
        await pilot.pause()
        assert table.sort_key == "amount"
        amounts = [j.request["gpu"] for j in table.rows]
        assert amounts == sorted(amounts)
        await pilot.press("S")
        assert [j.request["gpu"] for j in table.rows] == sorted(amounts, reverse=True)
        await pilot.press("g", "enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        assert app.screen.job.id == "2001"
        detail = screen_text(app)
        assert "waiting for free nodes/GPUs (Resources)" in detail
        assert "in 2h" in detail and "source estimate" in detail
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, JobDetailScreen)


async def test_queue_cursor_keys_and_mouse() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one(JobTable)
        await pilot.press("j", "j", "down")
        assert table.cursor == 3
        await pilot.press("k", "up")
        assert table.cursor == 1
        await pilot.press("G")
        assert table.cursor == 16
        await pilot.press("home")
        assert table.cursor == 0
        await pilot.click(JobTable, offset=(3, 5))  # row 4 (header is line 0)
        await pilot.pause()
        assert table.cursor == 4
        await pilot.click(JobTable, offset=(1, 0))  # header: sort by JOBID
        await pilot.pause()
        assert table.sort_key == "id"


async def test_queue_renders_only_visible_rows_of_a_large_queue() -> None:
    base = snapshot()
    many = [msgspec.structs.replace(base.jobs[-1], id=str(10_000 + i)) for i in range(20_000)]
    app = make_app(snapshot(jobs=many))
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one(JobTable)
        assert table.virtual_size.height == 20_001
        calls: list[int] = []
        original = table._row

        def counting(index: int):  # type: ignore[no-untyped-def]
            calls.append(index)
            return original(index)

        table._row = counting  # type: ignore[method-assign]
        await pilot.press("pagedown")
        await pilot.pause()
        assert calls and max(calls) < 100  # painted a page, not 20k rows
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor == 19_999
        assert "29999" in screen_text(app)


async def test_nodes_grid_letters_and_stranded() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("6")
        await pilot.pause()
        text = screen_text(app)
        assert "gpu03 alloc EEEEPPPP" in text
        assert "gpu08 mixed HHHH✕✕✕✕" in text  # CPUs exhausted: free GPUs stranded
        assert "gpu09 drain ✕✕✕✕✕✕✕✕" in text
        assert "gpu06 mixed LLEEEE··" in text
        assert "10 nodes  66/80 gpu used" in text


async def test_timeline_without_replay_says_so() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7")
        await pilot.pause()
        assert "needs a replay" in screen_text(app)


async def test_help_lists_every_key_and_closes() -> None:
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for _, key, what in KEYS:
            assert key in text and what[:20] in text
        listed = " ".join(k for _, k, _ in KEYS).split()
        assert "1" in listed and "7" in listed  # "1 … 7"
        names = {"question_mark": "?", "slash": "/", "colon": ":", "pageup": "pgup",
                 "pagedown": "pgdn", "up": "↑", "down": "↓", "left": "←", "right": "→",
                 "escape": "esc", "comma": ",", "full_stop": ".", "less_than_sign": "<",
                 "greater_than_sign": ">", "plus": "+", "equals_sign": "+", "minus": "-"}
        bindings = [*app.BINDINGS, *JobTable.BINDINGS, *QueueView.BINDINGS,
                    *(Binding(*b) if isinstance(b, tuple) else b
                      for b in TimelineView.BINDINGS)]
        for b in bindings:
            for k in b.key.split(","):  # type: ignore[union-attr]
                if k.isdigit():
                    continue
                assert names.get(k, k) in listed, f"binding {k} missing from help"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_colon_opens_the_command_palette_with_screens() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("colon")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Screen: Nodes")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.query_one(TabbedContent).active == "nodes"


async def test_theme_key_changes_theme() -> None:
    app = make_app()
    async with app.run_test() as pilot:
        await loaded(pilot)
        before = app.theme
        await pilot.press("t")
        assert app.theme != before


async def test_stale_source_banner_keeps_data() -> None:
    stale = snapshot(stale=True, stale_reason="squeue timed out after 10 s")
    app = make_app(snapshot(), stale, refresh=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.snapshot is not None and app.snapshot.stale:
                break
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "source stale: squeue timed out after 10 s" in text
        assert "showing the last good data" in text
        assert "no guarantee (Slurm)" in text  # the data is still on screen


async def test_failing_collector_banner_not_crash() -> None:
    app = QuotatopApp(BrokenCollector(snapshot()), refresh=0.05, clock=frozen_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.failure:
                break
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "source failed: RuntimeError: squeue: connection refused" in text
        assert "prod" in text


async def test_space_pauses_a_live_source_and_r_refreshes() -> None:
    collector = FixedCollector(snapshot())
    app = QuotatopApp(collector, refresh=0.05, clock=frozen_clock)
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.press("space")
        await pilot.pause(0.1)
        held = collector.calls
        await pilot.pause(0.3)
        assert collector.calls == held
        assert "PAUSED" in screen_text(app)
        await pilot.press("r")
        await pilot.pause(0.2)
        assert collector.calls == held + 1


async def test_q_quits() -> None:
    app = make_app()
    async with app.run_test() as pilot:
        await loaded(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_core_predictions_replace_source_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler_core

    def predict(data: bytes) -> list[dict]:
        return [{"job_id": "2002", "start": NOW + 600, "nodes": ["gpu04"],
                 "binding": "exp at its guarantee until 1006 ends", "preemptions": []}]

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause()
        text = screen_text(app)
        assert "start: core prediction" in text
        line = next(ln for ln in text.splitlines() if ln.startswith("2002"))
        assert "in 10m" in line and "exp at its guarantee" in line and "gpu04" in line


async def test_real_core_predictions_on_the_fixture() -> None:
    import scheduler_core

    if not hasattr(scheduler_core, "predict"):
        pytest.skip("this build of the core has no predict")
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        for _ in range(100):  # bounded: the core answers in its own worker after the frame
            await pilot.pause(0.02)
            if app.data is not None and app.data.predictions.from_core:
                break
        preds = app.data.predictions  # type: ignore[union-attr]
        assert preds.from_core and preds.error is None
        pending = {j.id for j in snapshot().jobs if j.state == "pending"}
        assert set(preds.by_id) == pending
        table = app.query_one(JobTable)
        table.set_filter("id:2006")
        await pilot.pause()
        line = next(ln for ln in screen_text(app).splitlines() if ln.startswith("2006"))
        p = preds.by_id["2006"]
        assert p.binding[:20] in line
        assert (p.nodes[0] in line) if p.nodes else ("—" in line)


async def test_failing_core_prediction_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler_core

    def predict(data: bytes) -> list[Job]:
        raise ValueError("bad snapshot")

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause()
        assert "core prediction failed: bad snapshot" in screen_text(app)


async def test_nodes_grid_and_priority_list_are_windowed_past_their_old_caps() -> None:
    import msgspec

    from tui.widgets.node_grid import NodeGrid
    from tui.widgets.pending_list import PendingList

    base = snapshot()
    many_nodes = [msgspec.structs.replace(base.nodes[0], name=f"n{i:04d}") for i in range(2000)]
    pend = next(j for j in base.jobs if j.state == "pending")
    many_pending = [msgspec.structs.replace(pend, id=str(50_000 + i), priority=float(-i))
                    for i in range(5000)]
    app = make_app(msgspec.structs.replace(base, nodes=many_nodes, jobs=many_pending))
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("6")
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        grid = app.query_one(NodeGrid)
        assert len(grid.cells) == 2000
        assert "n1999" in screen_text(app)  # the old grid stopped after 600
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        plist = app.query_one(PendingList)
        assert len(plist.rows) == 5000  # every pending job, not the top 200
        assert "54999" in screen_text(app) and "5000" in plist.row_text(4999)
