"""Incidents: what the detectors found live (queue storm, starvation,
over-commit, fragmentation, deadlock) — open ones first, then those that closed
this session — with the teams and jobs involved and the suggested remedy."""

from __future__ import annotations

import datetime as dt

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from quotatop.incidents import Incident
from quotatop.tui.format import DASH, duration
from quotatop.tui.table_fit import SCROLLBAR, Cell, Columns, Rows, fill_table, fit_layout
from quotatop.tui.views.base import View, ViewData

KIND_WORDS = {"queue_storm": "queue storm", "starvation": "starvation",
              "overcommit": "over-commit", "fragmentation": "fragmentation",
              "deadlock": "deadlock"}
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def kind_words(kind: str) -> str:
    return KIND_WORDS.get(kind, kind.replace("_", " "))


def jobs_text(jobs: list[str], shown: int = 3) -> str:
    if not jobs:
        return DASH
    head = ",".join(jobs[:shown])
    return head if len(jobs) <= shown else f"{head} +{len(jobs) - shown}"


EPOCH_MIN = 1e8  # 1973: a smaller `*_at` number is not a timestamp


def detail_value(key: str, value: object, now: float) -> str:
    """A detector's detail as read: a `*_at` epoch as the time of day in UTC and its
    age from the frame's own time (`12:00:00 UTC, 4m ago`), numbers without `.0`."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if key.endswith("_at") and value >= EPOCH_MIN:
            clock = dt.datetime.fromtimestamp(value, dt.UTC).strftime("%H:%M:%S UTC")
            ago = now - value
            when = (f"{duration(ago)} ago" if ago >= 1 else
                    "now" if ago > -1 else f"in {duration(-ago)}")
            return f"{clock} ({when})"
        if isinstance(value, float):
            return f"{value:.2f}".rstrip("0").rstrip(".")
        return str(value)
    return str(value)


def incident_line(inc: Incident, now: float) -> Text:
    """One line for the Overview: `▲ queue storm 4m exp — summary`."""
    t = Text()
    t.append("▲ ", style=SEVERITY_STYLE.get(inc.severity, ""))
    t.append(kind_words(inc.kind), style="bold")
    t.append(f" {duration(now - inc.opened_at)}", style="dim")
    if inc.teams:
        t.append(f" {','.join(inc.teams)}")
    if inc.summary:
        t.append(f" — {inc.summary}")
    return t


INCIDENT_COLUMNS = (("state", ""), ("kind", "kind"), ("since", "since"), ("for", "for"),
                    ("teams", "teams"), ("jobs", "jobs"), ("summary", "summary"),
                    ("remedy", "suggested remedy"))
# The summary and the remedy are clipped first, then the remedy goes, then the
# job ids. The highlighted incident shows all of them in full below the table.
INCIDENT_SHRINK = ("no_remedy", "no_jobs")


def incident_layout(rows: list[Incident], now: float, steps: frozenset[str]
                    ) -> tuple[Columns, Rows]:
    cols = [(k, title) for k, title in INCIDENT_COLUMNS if f"no_{k}" not in steps]
    out = []
    for inc in rows:
        is_open = inc.closed_at is None
        style = SEVERITY_STYLE.get(inc.severity, "") if is_open else "dim"
        span = (inc.closed_at if inc.closed_at is not None else now) - inc.opened_at
        cells: dict[str, Cell] = {
            "state": Text("open" if is_open else "closed", style=style),
            "kind": Text(kind_words(inc.kind), style="bold" if is_open else "dim"),
            "since": duration(now - inc.opened_at) + " ago", "for": duration(span),
            "teams": ",".join(inc.teams) or DASH, "jobs": jobs_text(inc.jobs),
            "summary": inc.summary or DASH, "remedy": inc.suggestion or DASH}
        out.append([cells[k] for k, _ in cols])
    return cols, out


class IncidentsView(View):
    title = "Incidents"

    def compose(self) -> ComposeResult:
        yield Static(id="inc-status")
        yield DataTable(id="inc-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="inc-detail")

    def on_mount(self) -> None:
        self._rows: list[Incident] = []
        self._now = 0.0

    def on_resize(self) -> None:
        self.repaint()

    def show_data(self, data: ViewData) -> None:
        state = data.incidents
        now = data.snap.taken_at or data.now
        self._now = now
        rows = [*state.open, *reversed(state.closed)]
        self._rows = rows
        table = self.query_one("#inc-table", DataTable)
        cols, cells, _ = fit_layout(lambda steps: incident_layout(rows, now, steps),
                                    INCIDENT_SHRINK, (self.size.width or 80) - SCROLLBAR,
                                    flex=("summary", "remedy"))
        fill_table(table, cols, cells)
        parts = [f"{len(state.open)} open", f"{len(state.closed)} closed this session",
                 "order: open, then newest closed",
                 "detectors: queue storm · starvation · over-commit · fragmentation · deadlock"]
        if state.error:
            parts.append(state.error)
        self.query_one("#inc-status", Static).update("  ·  ".join(parts))
        self._detail(table.cursor_row if rows else None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    def _detail(self, row: int | None) -> None:
        box = self.query_one("#inc-detail", Static)
        if row is None or not 0 <= row < len(self._rows):
            box.update(Text("no incident detected yet", style="dim"))
            return
        inc = self._rows[row]
        t = Text()
        t.append(kind_words(inc.kind), style="bold")
        t.append(f"  {inc.severity}", style=SEVERITY_STYLE.get(inc.severity, ""))
        t.append(f"\n{inc.summary}" if inc.summary else "")
        if inc.suggestion:
            t.append("\nremedy: ", style="bold")
            t.append(inc.suggestion)
        if inc.jobs:
            t.append("\njobs: ", style="bold")
            t.append(jobs_text(inc.jobs, 12))
        if inc.details:
            t.append("\n" + "  ".join(f"{k}={detail_value(k, v, self._now)}"
                                      for k, v in list(inc.details.items())[:8]),
                     style="dim")
        box.update(t)
