"""Issue #18, "The screen" and "Plots": charts with axes where a person looks
(Overview, Timeline), one scale across teams, and every screen fitted to the
terminal's width and height (80×24 and 200×50)."""

from __future__ import annotations

import re

import msgspec
import pytest
from rich.text import Text
from tests_tui_helpers import loaded, screen_text
from textual.widgets import DataTable, Static
from textual_plotext.plot import Plot
from tui_fixtures import FixedCollector, frozen_clock, snapshot

from conftest import DEMO
from quotatop.collectors.model import PENDING, Job
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.tui.app import QuotatopApp
from quotatop.tui.chart_data import (
    KEEP,
    ChartHistory,
    Sample,
    sample_of,
    team_points,
    team_waits,
    usage_top,
)
from quotatop.tui.derive import derive
from quotatop.tui.format import sparkline
from quotatop.tui.predictions import Predictions
from quotatop.tui.views.base import ViewData
from quotatop.tui.views.overview import team_cells
from quotatop.tui.widgets.charts import (
    MAX_POINTS,
    ChartPanel,
    TimelineCharts,
    draw_team_usage,
    thin,
)
from quotatop.tui.widgets.job_table import COLUMNS, REASON_MIN, JobTable, fit_columns


def fixture_app() -> QuotatopApp:
    return QuotatopApp(FixedCollector(), refresh=3600, clock=frozen_clock, theme="textual-dark")


def scenario_app(name: str = "queue_storm") -> QuotatopApp:
    source = ScenarioSource(load_scenario(DEMO / f"{name}.toml"), loop=False)
    return QuotatopApp(source, refresh=3600, clock=lambda: 0.0, theme="textual-dark")


async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
    """Until the collect a key started has painted (bounded)."""
    app = pilot.app
    for _ in range(200):
        await pilot.pause(0.02)
        if not app._collecting:
            break
    await pilot.pause()


async def step_frames(pilot, n: int) -> None:  # type: ignore[no-untyped-def]
    """Pause the play, then step ``n`` frames on the Timeline, one collect each."""
    await pilot.press("space", "7")
    for _ in range(n):
        await pilot.press("full_stop")
        await settle(pilot)


def _lines(app: QuotatopApp) -> list[str]:
    return screen_text(app).splitlines()


# --- the data the charts plot ------------------------------------------------------

def _sample(at: float, **used: float) -> Sample:
    return Sample(at=at, used=used, pending_jobs=1, queued=2.0, cluster_used=3.0,
                  cluster_total=10.0)


def test_chart_history_is_bounded_and_keyed_by_frame_time() -> None:
    h = ChartHistory()
    for i in range(KEEP + 50):
        h.add(_sample(float(i), a=1.0))
    assert len(h) == KEEP
    assert h.samples()[0].at == 50.0  # the oldest went first
    # A replay seeking back shows frame 100 again: replaced, not drawn twice.
    h.add(_sample(100.0, a=7.0))
    assert len(h) == KEEP
    assert [s.used["a"] for s in h.samples() if s.at == 100.0] == [7.0]
    assert [s.at for s in h.samples(start=60.0, end=62.0)] == [60.0, 61.0, 62.0]


def test_a_sample_counts_the_queue_once() -> None:
    snap = snapshot()
    d = derive(snap)
    s = sample_of(d, snap.taken_at)
    assert s.pending_jobs == sum(1 for j in snap.jobs if j.state == PENDING)
    assert s.used == {r.name: r.used for r in d.teams}
    assert s.utilization == pytest.approx(d.meter.used / d.meter.total)


def test_a_source_series_fills_the_team_chart_from_the_first_frame() -> None:
    """Prometheus keeps an hour of usage per team: the chart draws it, not one dot."""
    snap = snapshot()
    names = [t.name for t in snap.teams]
    points = team_points([_sample(snap.taken_at, prod=28.0, solo=3.0)], snap.utilization,
                         [*names, "solo"])
    assert len(points["prod"]) == 12 and points["prod"][-1] == (snap.taken_at, 28.0)
    assert points["solo"] == [(snap.taken_at, 3.0)]  # no series: the frames shown


def test_a_long_history_is_thinned_keeping_its_peaks() -> None:
    xs = [float(i) for i in range(KEEP)]
    ys = [0.0] * KEEP
    ys[333] = 50.0  # one spike among flat frames
    tx, ty = thin(xs, ys, MAX_POINTS)
    assert len(tx) <= MAX_POINTS + 1 and max(ty) == 50.0 and tx[-1] == xs[-1]
    assert thin(xs[:10], ys[:10], MAX_POINTS) == (xs[:10], ys[:10])


def test_team_waits_are_medians_from_now() -> None:
    base = snapshot()
    now = base.taken_at
    pend = [Job(id=f"w{i}", name="x", user="u", team="prod", qos="normal", partition="gpu",
                state=PENDING, request={"gpu": 1.0}, submit_time=now,
                estimated_start=now + h * 3600.0) for i, h in enumerate((1, 2, 9))]
    waits = team_waits(snapshot(jobs=pend), Predictions(), now)
    assert waits == {"prod": 2 * 3600.0}


def test_every_team_chart_has_the_same_scale() -> None:
    d = derive(snapshot())
    samples = [_sample(1.0, **{r.name: r.used for r in d.teams}),
               _sample(2.0, **{r.name: 0.0 for r in d.teams})]
    points = team_points(samples, [], [r.name for r in d.teams])
    top = usage_top(points, [r.max for r in d.teams])
    ticks = []
    for r in d.teams:
        plt = Plot()
        plt.plotsize(40, 10)
        draw_team_usage(plt, r, points, top)
        text = Text.from_ansi(plt.build()).plain
        ticks.append(re.findall(r"^\s*(\d+)[┤├]", text, re.M))
    assert top == max(r.max or 0 for r in d.teams)
    assert all(t == ticks[0] for t in ticks) and ticks[0][0] == str(int(top))


def test_sparklines_share_one_scale() -> None:
    """A team at 0 draws at the floor, not as its own peak ("█▁▁▁")."""
    snap = snapshot()
    data = ViewData(snap=snap, derived=derive(snap), predictions=Predictions(),
                    now=snap.taken_at, history={"prod": [40.0] * 10, "hpc": [1.0, 0, 0, 0]})
    cols, rows = team_cells(data, frozenset())
    at = [k for k, _ in cols].index("trend")
    by_team = {r[0].plain: r[at].plain for r in rows}
    assert by_team["prod"] == "█" * 10
    assert set(by_team["hpc"].strip()) == {"▁"}
    assert dict(cols)["trend"] == "trend ≤40"
    # The per-row scale this replaced: the same history drew a full bar.
    assert sparkline([1.0, 0, 0, 0], 4).startswith("█")


# --- the Overview ------------------------------------------------------------------

async def test_overview_200x50_charts_fill_the_height() -> None:
    app = fixture_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.2)
        panel = app.query_one(ChartPanel)
        # One chart per team (a shared scale) over queue, utilization and wait.
        assert panel.shown() == [r.name for r in app.data.derived.teams] + [
            "queue", "util", "wait"]
        # The charts reach the footer: the Overview uses the height.
        assert panel.region.bottom == 49
        text = screen_text(app)
        for title in ("prod · used 28 · guar 48 · max 64", "queue depth (pending jobs) · 6 now",
                      "cluster GPU utilization · 82%", "predicted wait, median"):
            assert title in text


async def test_overview_80x24_keeps_names_trend_tabs_and_cadence() -> None:
    app = fixture_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.2)
        lines = _lines(app)
        assert lines[0].rstrip().endswith("every 3600s")
        assert "8 Incidents" in lines[1]
        table = app.query_one("#teams", DataTable)
        keys = [str(k.value) for k in table.columns]
        assert "trend" in keys
        assert str(table.get_cell("prod", "lent")) == "2 → elastic"
        assert all(len(line) <= 80 for line in lines)
        # The rows the table leaves show a chart of every team on one scale.
        assert app.query_one(ChartPanel).shown() == ["usage", "queue"]
        assert "GPU used by team" in screen_text(app)


async def test_the_meter_grows_with_the_width() -> None:
    widths = {}
    for w in (80, 200):
        app = fixture_app()
        async with app.run_test(size=(w, 30)) as pilot:
            await loaded(pilot)
            await pilot.pause(0.1)
            meter = str(app.query_one("#meter", Static).render())
            widths[w] = sum(meter.count(c) for c in "█▒░")
            assert meter.rstrip().endswith("of 80")  # its numbers are never cut
            assert len(meter.rstrip()) <= w - 2
    assert widths[80] >= 30 and widths[200] >= widths[80] + 100


# --- the Queue's columns -------------------------------------------------------------

def test_the_reason_takes_every_free_cell() -> None:
    wide = {c.key: c.width for c in fit_columns(198)}
    fixed = sum(c.width + 1 for c in COLUMNS if c.key != "reason") + 1
    assert wide["reason"] == 198 - fixed > 44
    narrow = {c.key: c.width for c in fit_columns(78)}
    assert "where" not in narrow and sum(w + 1 for w in narrow.values()) == 78


def test_long_names_widen_their_column_when_there_is_room() -> None:
    wants = {"team": 20, "user": 11, "id": 9}
    wide = {c.key: c.width for c in fit_columns(198, wants)}
    assert (wide["team"], wide["user"], wide["id"]) == (20, 11, 9)
    assert sum(w + 1 for w in wide.values()) == 198
    # At 80 columns the reason keeps its cells first: the names stay as they were.
    narrow = {c.key: c.width for c in fit_columns(78, wants)}
    assert narrow["team"] == 7 and narrow["reason"] < REASON_MIN


async def test_queue_200x50_does_not_cut_reasons_or_team_names() -> None:
    long_team = "climate-modelling"
    snap = snapshot()
    jobs = [*snap.jobs[:-1], Job(id="9999", name="long", user="ana", team=long_team,
                                 qos="normal", partition="gpu", state=PENDING,
                                 request={"gpu": 1.0}, submit_time=snap.taken_at - 60,
                                 reason="Resources")]
    app = QuotatopApp(FixedCollector(snapshot(jobs=jobs)), refresh=3600, clock=frozen_clock)
    async with app.run_test(size=(200, 50)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause(0.2)
        cols = {c.key: c.width for c in app.query_one(JobTable).columns}
        assert cols["team"] == len(long_team)
        assert cols["reason"] > 90
        assert long_team in screen_text(app)


# --- the Timeline ----------------------------------------------------------------------

async def test_timeline_charts_usage_and_queue_under_the_marks() -> None:
    app = scenario_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await loaded(pilot)
        await step_frames(pilot, 6)
        tl = app.timeline
        assert tl is not None
        charts = app.query_one(TimelineCharts)
        assert charts.region.height >= 14
        text = screen_text(app)
        assert "GPU used by team" in text and "queue depth (pending jobs)" in text
        # The x axis is the replay's whole span, the bar's: start and end labelled.
        span = tl.end_time - tl.start_time
        from quotatop.tui.format import clock_label
        assert clock_label(tl.start_time, span) in text
        assert clock_label(tl.end_time, span) in text
        # One sample per frame shown (the first collect's and each step's).
        assert len(app.chart_history) == 7


async def test_a_step_counted_replay_charts_at_its_steps() -> None:
    """The fifo seed counts frames in steps (its snapshots carry the wall clock): the
    charts place each frame at its step, inside the bar's span."""
    app = scenario_app("seed_fifo")
    async with app.run_test(size=(100, 40)) as pilot:
        await loaded(pilot)
        await step_frames(pilot, 3)
        tl = app.timeline
        assert tl is not None
        times = [s.at for s in app.chart_history.samples()]
        assert times == [float(i) for i in range(tl.position - 3, tl.position + 1)]
        assert all(tl.start_time <= t <= tl.end_time for t in times)


async def test_a_long_team_list_keeps_its_rows_before_the_charts() -> None:
    """30 accounts at 80×24: the table takes every row, no half-drawn chart under it."""
    base = snapshot()
    teams = [msgspec.structs.replace(base.teams[0], name=f"acct{i:02d}") for i in range(30)]
    app = QuotatopApp(FixedCollector(snapshot(teams=teams)), refresh=3600, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.2)
        assert not app.query_one(ChartPanel).display
        assert app.query_one("#teams", DataTable).region.height >= 12
    async with QuotatopApp(FixedCollector(snapshot(teams=teams)), refresh=3600,
                           clock=frozen_clock).run_test(size=(200, 50)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.2)
        assert pilot.app.query_one(ChartPanel).display  # 50 rows: room for both
