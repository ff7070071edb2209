"""Pilot tests: every screen on the fixed fixture, and every key."""

from __future__ import annotations

import contextlib
import gc
import re
import sys
import threading
from collections.abc import AsyncIterator

import msgspec
import pytest
from tests_tui_helpers import loaded, screen_text
from textual.binding import Binding
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.scroll_view import ScrollView
from textual.widgets import Input, Static, TabbedContent
from tui_fixtures import NOW, T0, BrokenCollector, FixedCollector, frozen_clock, snapshot

from quotatop.collectors.base import Collector
from quotatop.collectors.model import Job, Snapshot
from quotatop.tui.app import QuotatopApp, help_sources
from quotatop.tui.help import help_rows
from quotatop.tui.modals import HelpScreen, JobDetailScreen
from quotatop.tui.views.overview import OverviewView
from quotatop.tui.views.queue import QueueView
from quotatop.tui.views.timeline import TimelineView
from quotatop.tui.views_registry import VIEW_IDS
from quotatop.tui.widgets.job_table import JobTable


def make_app(*snaps, refresh: float = 60.0) -> QuotatopApp:
    return QuotatopApp(FixedCollector(*snaps), refresh=refresh, clock=frozen_clock)


@contextlib.asynccontextmanager
async def running(*snaps: Snapshot, size: tuple[int, int] | None = (100, 30),
                  refresh: float = 60.0, collector: Collector | None = None,
                  wait: bool = True) -> AsyncIterator[tuple[QuotatopApp, Pilot]]:
    """The app on the fixture (or those snapshots) under Pilot, after its first
    snapshot is painted (``wait=False``: right away)."""
    app = QuotatopApp(collector or FixedCollector(*snaps), refresh=refresh, clock=frozen_clock)
    async with app.run_test(size=size) as pilot:
        if wait:
            await loaded(pilot)
        yield app, pilot




async def test_number_keys_switch_screens() -> None:
    async with running() as (app, pilot):
        for key, vid in zip("2345671", ("quota", "priority", "elastic", "queue", "nodes",
                                        "timeline", "overview"), strict=True):
            await pilot.press(key)
            await pilot.pause()
            assert app.query_one(TabbedContent).active == vid


async def test_overview_shows_teams_meter_and_no_guarantee() -> None:
    async with running() as (app, _):
        text = screen_text(app)
        assert "used 66 · free 2 · stranded 12 of 80" in text
        assert "no guarantee (Slurm)" in text
        assert "2 ← prod" in text  # elastic borrows 2 from prod
        assert "2 → elastic" in text
        assert "atlas" in text and "refreshed 0s ago" in text
        assert "125%" in text  # elastic at 10 of its 8 guarantee


async def test_quota_split_without_over_commit_warning() -> None:
    async with running() as (app, pilot):
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "over-committed" not in text
        assert "prod 48 (60%)  exp 24 (30%)  elastic 8 (10%)" in text
        assert "hpc: no guarantee (Slurm), max 16 only" in text


async def test_quota_over_commit_warning_when_quotas_exceed_cluster() -> None:
    snap = snapshot()
    snap.teams[1].guarantee = {"gpu": 40.0}
    async with running(snap) as (app, pilot):
        await pilot.press("2")
        await pilot.pause()
        assert "over-committed: quotas add up to 96 gpu but the cluster has 80" in \
            screen_text(app)


async def test_priority_preemption_is_the_cores_answer() -> None:
    """The core predicts 2001 (two whole 8-GPU nodes) cannot start by preempting the
    low and scavenger jobs: the panel says so, not the view's own guess."""
    async with running() as (app, pilot):
        await pilot.press("3")
        await pilot.pause()
        panel = str(app.query_one("#preempt", Static).content)
        assert "2001 (prod, qos high, 16 gpu)" in panel and "would preempt" not in panel
        assert "the core predicts no preemption: waits for 2 nodes" in panel
        legend = str(app.query_one("#legend", Static).content)
        assert legend.startswith("pending in the core's priority order")
        assert "factors as fixture (slurm+kueue) reports them (sprio): " in legend
        assert " rank " in screen_text(app)


async def test_priority_orders_pending_and_says_there_is_no_core_to_predict_preemption(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop import scheduler_core

    monkeypatch.delattr(scheduler_core, "predict", raising=False)  # a build with no core
    async with running() as (app, pilot):
        await pilot.press("3")
        await pilot.pause()
        text = screen_text(app)
        order = [text.index(f" {j} ") for j in ("2001", "2006", "2005", "2002", "2003", "2004")]
        assert order == sorted(order)
        assert str(app.query_one("#legend", Static).content).startswith(
            "pending in priority order (the source's priority")
        panel = str(app.query_one("#preempt", Static).content)
        # No preemption model of the TUI's own: without the core, no victims at all.
        assert panel == "Preemption\nnot predicted: this build has no scheduling core"


async def test_preemption_panel_waits_for_the_core_then_shows_its_victims(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop import scheduler_core

    answer = threading.Event()

    def predict(data: bytes) -> list[dict]:
        answer.wait(10)
        return [{"job_id": "2001", "start": T0, "nodes": ["gpu01"], "binding": "",
                 "preemptions": ["1009", "1010"]}]

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    async with running() as (app, pilot):
        await pilot.press("3")
        await pilot.pause()
        panel = str(app.query_one("#preempt", Static).content)
        assert panel == "Preemption\nwaiting for the scheduling core…"
        answer.set()
        for _ in range(100):  # bounded: the core answers in its own worker
            await pilot.pause(0.02)
            if app.data is not None and app.data.predictions.from_core:
                break
        await pilot.pause()
        panel = str(app.query_one("#preempt", Static).content)
        assert "2001 (prod, qos high, 16 gpu) would preempt, in order:" in panel
        # The core's victims in the core's order, and no others.
        victims = panel.split("in order:")[1]
        assert victims.index("1009") < victims.index("1010")
        assert "1001" not in victims and "estimate" not in panel


async def test_elastic_shows_borrowing_and_reclaim_order() -> None:
    async with running() as (app, pilot):
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        assert "10 · g 8 · max 32" in text
        assert "prod 2" in text  # elastic borrows from prod
        reclaim = text.split("Reclaimed first")[1]
        assert "1010" in reclaim


async def test_queue_filter_sort_and_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop import scheduler_core

    monkeypatch.delattr(scheduler_core, "predict", raising=False)  # the source's own words
    async with running() as (app, pilot):
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
        assert "in 119m" in detail and "source estimate" in detail
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, JobDetailScreen)


async def test_job_detail_shows_the_start_window_from_sampled_plans() -> None:
    # With the core: the detail of a pending job samples its start window in a worker
    # and shows it as clock times ("HH:MM–HH:MM UTC, likely HH:MM"), or, for a job
    # the plans all start at one instant, that instant.
    async with running() as (app, pilot):
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"state:pend")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("g", "enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JobDetailScreen)
        for _ in range(100):
            if not isinstance(screen.window, str):
                break
            await pilot.pause(0.05)
        detail = screen_text(app)
        assert "start window" in detail
        clock = r"(now|(\d\d-\d\d )?\d\d:\d\d)"
        assert re.search(rf"start window\s+({clock}(–{clock})? UTC(, likely {clock})?"
                         r"|beyond the horizon)", detail), detail


async def test_queue_cursor_keys_and_mouse() -> None:
    async with running() as (app, pilot):
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
    async with running(snapshot(jobs=many)) as (app, pilot):
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
    async with running() as (app, pilot):
        await pilot.press("6")
        await pilot.pause()
        text = screen_text(app)
        assert "gpu03 alloc EEEEPPPP" in text
        assert "gpu08 mixed HHHH✕✕✕✕" in text  # CPUs exhausted: free GPUs stranded
        assert "gpu09 drain ✕✕✕✕✕✕✕✕" in text
        assert "gpu06 mixed LLEEEE··" in text
        assert "10 nodes  66/80 gpu used" in text


async def test_timeline_without_replay_says_so() -> None:
    async with running() as (app, pilot):
        await pilot.press("7")
        await pilot.pause()
        assert "needs a replay" in screen_text(app)


async def test_help_lists_every_key_and_closes() -> None:
    rows = help_rows(help_sources())
    async with running(size=(100, 70)) as (app, pilot):  # tall enough for every row
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for _, key, what in rows:
            assert key in text and what[:20] in text
        listed = " ".join(k for _, k, _ in rows).split()
        names = {"question_mark": "?", "slash": "/", "colon": ":", "pageup": "pgup",
                 "pagedown": "pgdn", "up": "↑", "down": "↓", "left": "←", "right": "→",
                 "escape": "esc", "comma": ",", "full_stop": ".", "less_than_sign": "<",
                 "greater_than_sign": ">", "plus": "+", "equals_sign": "=", "minus": "-",
                 "left_square_bracket": "[", "right_square_bracket": "]"}
        bindings = [*app.BINDINGS, *JobTable.BINDINGS, *QueueView.BINDINGS,
                    *OverviewView.BINDINGS, *TimelineView.BINDINGS]
        for b in bindings:
            for k in b.key.split(","):  # type: ignore[union-attr]
                assert names.get(k, k) in listed, f"binding {k} missing from help"
        # Keys no Binding declares, and words of the old hand-kept table.
        said = " ".join(f"{k} {w}" for _, k, w in rows)
        for words in ("mouse", "shift+letter", "enter fold / unfold a parent account",
                      "job detail (esc closes)", "×1 ×2 ×5 ×10 ×50 ×100 ×1000",
                      "Incidents: open and closed", "pgup pgdn / ctrl+b ctrl+f page"):
            assert words in said, words
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


def test_help_rows_come_from_the_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key bound once is in the help; a tooltip is its line, else the description."""
    new = [*QueueView.BINDINGS, Binding("x", "noop", "Xray", tooltip="look through jobs"),
           Binding("y", "noop", "Yank")]
    monkeypatch.setattr(QueueView, "BINDINGS", new)
    rows = help_rows(help_sources())
    assert ("Queue", "x", "look through jobs") in rows
    assert ("Queue", "y", "Yank") in rows
    # A group is one row, its keys' alternatives apart; a key said already is not repeated.
    assert ("tables", "↑ ↓ / k j", "move the cursor") in rows
    assert sum(1 for _, k, _ in rows if k == ", .") == 1
    assert [k for s, k, _ in rows if s == "Timeline"] == ["home", "end", "+ / =", "-"]


def test_every_class_that_binds_keys_is_in_the_help() -> None:
    """The help lists the classes it knows (tui/help.py); a new class with BINDINGS must
    be one of them, or a pushed screen (its keys close it, as esc everywhere says)."""
    import importlib
    import pkgutil

    from textual.dom import DOMNode
    from textual.screen import Screen

    from quotatop import tui

    for mod in pkgutil.walk_packages(tui.__path__, "quotatop.tui."):
        importlib.import_module(mod.name)
    listed = {cls for _, cls in help_sources()}

    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    for cls in subclasses(DOMNode):
        if not cls.__module__.startswith("quotatop.tui.") or "BINDINGS" not in cls.__dict__:
            continue
        if issubclass(cls, Screen):  # a pushed screen (the report covers the terminal)
            assert all("escape" in b.key.split(",") for b in cls.BINDINGS)  # type: ignore[union-attr]
            continue
        assert cls in listed, f"{cls.__name__} binds keys the help screen does not list"


async def test_colon_opens_the_command_palette_with_screens() -> None:
    async with running() as (app, pilot):
        await pilot.press("colon")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Screen: Nodes")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.query_one(TabbedContent).active == "nodes"


async def test_theme_key_changes_theme() -> None:
    async with running(size=None) as (app, pilot):
        before = app.theme
        await pilot.press("t")
        assert app.theme != before


async def test_stale_source_banner_keeps_data() -> None:
    stale = snapshot(stale=True, stale_reason="squeue timed out after 10 s")
    async with running(snapshot(), stale, refresh=0.05, wait=False) as (app, pilot):
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
    broken = BrokenCollector(snapshot())
    async with running(collector=broken, refresh=0.05, wait=False) as (app, pilot):
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
    async with running(collector=collector, refresh=0.05, size=None) as (app, pilot):
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
    from quotatop import scheduler_core

    def predict(data: bytes) -> list[dict]:
        return [{"job_id": "2002", "start": NOW + 600, "nodes": ["gpu04"],
                 "binding": "exp at its guarantee until 1006 ends", "preemptions": []}]

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    async with running(size=(120, 30)) as (app, pilot):
        await pilot.press("5")
        await pilot.pause()
        text = screen_text(app)
        assert "start: core prediction" in text
        line = next(ln for ln in text.splitlines() if ln.startswith("2002"))
        assert "in 10m" in line and "exp at its guarantee" in line and "gpu04" in line


async def test_real_core_predictions_on_the_fixture() -> None:
    from quotatop import scheduler_core

    if not hasattr(scheduler_core, "predict"):
        pytest.skip("this build of the core has no predict")
    async with running(size=(120, 30)) as (app, pilot):
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
    from quotatop import scheduler_core

    def predict(data: bytes) -> list[Job]:
        raise ValueError("bad snapshot")

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    async with running(size=(120, 30)) as (app, pilot):
        await pilot.press("5")
        await pilot.pause()
        assert "core prediction failed: bad snapshot" in screen_text(app)


async def test_nodes_grid_and_priority_list_are_windowed_past_their_old_caps() -> None:
    import msgspec

    from quotatop.tui.widgets.node_grid import NodeGrid
    from quotatop.tui.widgets.pending_list import PendingList

    base = snapshot()
    many_nodes = [msgspec.structs.replace(base.nodes[0], name=f"n{i:04d}") for i in range(2000)]
    pend = next(j for j in base.jobs if j.state == "pending")
    many_pending = [msgspec.structs.replace(pend, id=str(50_000 + i), priority=float(-i))
                    for i in range(5000)]
    big = msgspec.structs.replace(base, nodes=many_nodes, jobs=many_pending)
    async with running(big) as (app, pilot):
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


def long_lists() -> Snapshot:
    """The fixture with 400 more pending jobs: the job table and the pending list
    get a vertical scrollbar, which must not push them into a sideways one."""
    base = snapshot()
    pend = next(j for j in base.jobs if j.state == "pending")
    more = [msgspec.structs.replace(pend, id=str(60_000 + i), priority=float(i))
            for i in range(400)]
    return snapshot(jobs=[*base.jobs, *more])


@pytest.mark.parametrize("lists", ["fixture", "long"])
async def test_every_screen_fits_80x24_without_sideways_scroll(lists: str) -> None:
    async with running(*([long_lists()] if lists == "long" else []), size=(80, 24)) as (app, pilot):
        for i, vid in enumerate(VIEW_IDS, 1):
            await pilot.press(str(i))
            await pilot.pause()
            tables = [w for w in app.view(vid).query(ScrollView)
                      if not isinstance(w, Input) and w.display and w.size.width]
            assert tables or vid == "timeline", f"{vid}: no table on screen"
            for w in tables:
                room = w.scrollable_content_region.width
                assert w.virtual_size.width <= room <= 80, \
                    f"{vid} #{w.id}: {w.virtual_size.width} cells wide in {room}"
                assert w.max_scroll_x == 0, f"{vid} #{w.id} scrolls sideways"


async def test_quota_at_80x24_shows_every_qos_and_what_it_dropped() -> None:
    async with running(size=(80, 24)) as (app, pilot):
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "scavenger  0" in text  # the last QoS row is on screen, not cut off
        assert "max wall" in text.split("QoS limits")[0]  # the team table keeps MaxWall
        assert "prod: share 60%" in text  # the dropped column, for the highlighted team
        await pilot.press("down")
        await pilot.pause()
        assert "exp: share 30%" in screen_text(app)


async def test_first_frame_is_painted_before_the_core_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop import scheduler_core

    answer = threading.Event()
    asked = threading.Event()

    def predict(data: bytes) -> list[dict]:
        asked.set()
        answer.wait(10)  # bounded: a failed test must not hang the worker
        return [{"job_id": "2002", "start": NOW + 600, "nodes": ["gpu04"],
                 "binding": "exp at its guarantee until 1006 ends", "preemptions": []}]

    monkeypatch.setattr(scheduler_core, "predict", predict, raising=False)
    async with running(size=(120, 30)) as (app, pilot):
        try:
            await pilot.press("5")
            await pilot.pause()
            text = screen_text(app)
            assert "17 of 17 jobs" in text and "core predicting" in text
            for _ in range(100):
                if asked.is_set():
                    break
                await pilot.pause(0.02)
            assert asked.is_set() and not app.data.predictions.from_core  # type: ignore[union-attr]
        finally:
            answer.set()
        for _ in range(100):
            await pilot.pause(0.02)
            if app.data is not None and app.data.predictions.from_core:
                break
        await pilot.pause()
        line = next(ln for ln in screen_text(app).splitlines() if ln.startswith("2002"))
        assert "in 10m" in line and "exp at its guarantee" in line


async def test_hidden_views_let_go_of_a_replaced_snapshot() -> None:
    # A second frame that says something new (an equal one is not a replacement: the
    # session keeps the objects on screen, tests/test_tui_session.py).
    first = snapshot()
    second = msgspec.structs.replace(snapshot(), warnings=["the second frame"])
    async with running(first, second) as (app, pilot):
        for key in "5231":  # the queue and the priority list hold the first one's jobs
            await pilot.press(key)
            await pilot.pause()
        app.refresh_now()
        for _ in range(100):
            await pilot.pause(0.02)
            if app.snapshot is second:
                break
        await pilot.pause()
        gc.collect()
        pending = next(j for j in first.jobs if j.state == "pending")
        # Only the first snapshot holds its job list, and only that list the job
        # (counted outside the asserts: pytest's rewriting keeps its own references).
        refs = (sys.getrefcount(first.jobs), sys.getrefcount(pending))
        assert refs == (2, 3)
        await pilot.press("5")
        await pilot.pause()
        assert app.query_one(JobTable).jobs is second.jobs


async def test_nodes_view_lists_the_advanced_reservations() -> None:
    from quotatop.collectors.model import Reservation

    resv = [Reservation(name="train", nodes=["gpu03", "gpu04"], start=NOW - 60,
                        end=NOW + 1800, users=["alice", "erin"], state="active"),
            Reservation(name="maint", nodes=["gpu07", "gpu08"], start=NOW + 90,
                        end=NOW + 1890, accounts=["ops"], state="inactive")]
    snap = msgspec.structs.replace(snapshot(), reservations=resv)
    async with running(snap, size=(120, 40)) as (app, pilot):
        await pilot.press("6")
        await pilot.pause()
        text = screen_text(app)
        assert "reserved train      gpu03,gpu04  active, ends in 30m  for alice,erin" in text
        # Measured from the frame (5 s before NOW): 95 s, then 1895 s, truncated to 31m.
        assert "reserved maint      gpu07,gpu08  starts in 95s, ends in 31m  for ops" in text
