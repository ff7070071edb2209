"""The Report screen (key ``m``): per team, GPU-hours used against guarantee-hours, cost,
wait percentiles and the longest-waiting jobs of the period — the numbers of
``quotatop report`` (review/report.py), computed in a thread worker from the
job runs the session can get (tui/report_frames.py), painted as two charts and two
tables. Nothing here runs a subprocess.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot
from quotatop.collectors.untrusted import printable, printable_tree
from quotatop.review.report import Prices, Report, TeamRow
from quotatop.tui.format import DASH, duration
from quotatop.tui.report_frames import session_report

TEAM_COLUMNS = ("team", "jobs", "GPU-h used", "guarantee GPU-h", "idle guarantee GPU-h",
                "CPU-h", "cost", "preempted", "wait p50", "wait p90")
WAIT_COLUMNS = ("job", "team", "user", "submitted", "started", "wait")


def _h(v: float | None) -> str:
    return DASH if v is None else f"{v:,.1f}"


def _wait(v: float | None) -> str:
    return DASH if v is None else duration(v)


def _when(t: float | None) -> str:
    if t is None:
        return "still pending"
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%m-%d %H:%M")


def team_cells(rep: Report) -> list[list[str]]:
    cur = f" {rep.currency}" if rep.currency else ""
    out = []
    for r in [*rep.teams, rep.total]:
        name = "  " * r.depth + ("└ " if r.depth else "") + r.team
        # GPU-hours of a type with no price are not costed at zero: said, not hidden.
        if r.unpriced_gpu_hours > 0 and r.cost == 0:
            cost = "unpriced"
        else:
            cost = f"{r.cost:,.2f}{cur}" + (" + unpriced" if r.unpriced_gpu_hours > 0 else "")
        out.append([name, str(r.jobs), _h(r.gpu_hours), _h(r.guarantee_gpu_hours),
                    _h(r.idle_guarantee_gpu_hours), _h(r.cpu_hours), cost,
                    str(r.preemptions), _wait(r.wait_p50), _wait(r.wait_p90)])
    return out


def wait_cells(rep: Report) -> list[list[str]]:
    return [[w.job_id, w.team, w.user, _when(w.submit), _when(w.start), _wait(w.wait)]
            for w in rep.total.longest_waits]


def chart_teams(rep: Report) -> list[TeamRow]:
    """The roots of the account tree (a child's hours are in its parent's bar)."""
    return [r for r in rep.teams if r.depth == 0]


class ReportScreen(Screen[None]):
    """The whole terminal, so a Screen, not a ModalScreen: a modal one keeps the
    Overview beneath it composited, and every refresh rendered its hidden charts
    (issue #32: 6 % of a core with the report open, against 3 % on the Overview)."""

    BINDINGS = [Binding("escape,q,m", "dismiss", "Close")]

    def __init__(self, collector: Any, recording: Path | None,
                 prices: Prices | None = None, snap: Snapshot | None = None) -> None:
        super().__init__()
        self.collector = collector
        self.snap = snap  # a live Slurm's report ends at this snapshot's time
        self.recording = recording
        self.prices = prices
        self.report: Report | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="report-box"):
            yield Static("Report: GPU-hours, quota, cost and waits per team", id="report-title")
            yield Static("computing the report of the session's frames…", id="report-status")
            with Horizontal(id="report-charts"):
                yield PlotextPlot(id="chart-hours")
                yield PlotextPlot(id="chart-waits")
            yield Static("per team (a parent's row includes its sub-accounts)",
                         classes="caption")
            yield DataTable(id="report-teams", cursor_type="row", zebra_stripes=True)
            yield Static("the longest waits", classes="caption")
            yield DataTable(id="report-waits", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#report-teams", DataTable).add_columns(*TEAM_COLUMNS)
        self.query_one("#report-waits", DataTable).add_columns(*WAIT_COLUMNS)
        self._compute()

    @work(thread=True, exclusive=True, group="report", description="report")
    def _compute(self) -> None:
        try:
            # From a recording or sacct: the cluster's names as they were, escaped here
            # as the session escapes a snapshot (collectors/untrusted.py).
            rep = printable_tree(session_report(self.collector, self.recording, self.prices,
                                                self.snap))
        except UserError as e:
            self.app.call_from_thread(self._failed, printable(str(e)))
            return
        except Exception as e:  # a bad recording must be a message, not a crash
            self.app.call_from_thread(self._failed, printable(f"{type(e).__name__}: {e}"))
            return
        self.app.call_from_thread(self._show, rep)

    def _failed(self, message: str) -> None:
        self.error = message
        if not self.is_attached:  # closed while the report was computed
            return
        status = self.query_one("#report-status", Static)
        status.update(message)
        status.add_class("error")

    def _show(self, rep: Report) -> None:
        self.report = rep
        if not self.is_attached:
            return
        start = dt.datetime.fromtimestamp(rep.since, dt.UTC).strftime("%Y-%m-%d %H:%M")
        end = dt.datetime.fromtimestamp(rep.until, dt.UTC).strftime("%Y-%m-%d %H:%M")
        where = f"{rep.source} {rep.cluster}".strip()
        self.query_one("#report-title", Static).update(
            f"Report: {where}, {start} to {end} UTC ({duration(rep.until - rep.since)})")
        self.query_one("#report-status", Static).update(
            " · ".join([*rep.notes, "esc closes", "the same numbers as `quotatop report`"]))
        teams = self.query_one("#report-teams", DataTable)
        teams.clear()
        for row in team_cells(rep):
            teams.add_row(*row)
        waits = self.query_one("#report-waits", DataTable)
        waits.clear()
        for row in wait_cells(rep):
            waits.add_row(*row)
        self._charts(rep)

    def _charts(self, rep: Report) -> None:
        roots = chart_teams(rep)
        names = [r.team for r in roots]
        hours = self.query_one("#chart-hours", PlotextPlot)
        p = hours.plt
        p.clear_data()
        p.clear_figure()
        p.title("GPU-hours: used vs guarantee")
        if names:
            p.multiple_bar(names, [[r.gpu_hours for r in roots],
                                   [r.guarantee_gpu_hours or 0.0 for r in roots]],
                           labels=["used", "guarantee"])
        hours.refresh()
        waits = self.query_one("#chart-waits", PlotextPlot)
        w = waits.plt
        w.clear_data()
        w.clear_figure()
        w.title("wait p50 / p90 (hours)")
        if names:
            p50 = [(r.wait_p50 or 0.0) / 3600 for r in roots]
            p90 = [(r.wait_p90 or 0.0) / 3600 for r in roots]
            w.multiple_bar(names, [p50, p90], labels=["p50", "p90"])
            w.ylim(0, max([*p50, *p90]) or 1.0)  # no negative axis when nobody waited
        waits.refresh()
