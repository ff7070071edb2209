"""Overview: one row per team, the cluster meter, open incidents, freshness."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from quotatop.tui.chart_data import team_points, team_waits
from quotatop.tui.derive import ClusterMeter, TeamRow, visible_rows
from quotatop.tui.format import DASH, clock_time, duration, num, pct, sparkline
from quotatop.tui.paint import update_static
from quotatop.tui.table_fit import Columns, Rows, fill_table, fit_layout
from quotatop.tui.theme_colors import team_style
from quotatop.tui.views.base import View, ViewData, no_guarantee
from quotatop.tui.views.incidents import incident_line
from quotatop.tui.widgets.charts import MIN_H, ChartPanel
from quotatop.tui.widgets.sortable_table import SortableTable

COLUMNS = (("team", "team"), ("guarantee", "guarantee"), ("max", "max"), ("used", "used"),
           ("borrowed", "borrowed"), ("lent", "lent"), ("running", "run"),
           ("pending", "pend"), ("queued", "queued"), ("util", "util"), ("trend", "trend"))
TREND_WIDTH = 10
NARROW_TREND = 6
# What a narrow terminal gives up first, in order: merge the job counts, a
# shorter sparkline, "no guarantee (Slurm)" said shortly, queued demand (the
# Queue screen has it), the lent-to names (the borrower's row names the lender
# too), then the sparkline. Team, quota, used and util stay. At 80 columns the
# lent-to names and the trend still fit.
SHRINK_STEPS = ("merge_jobs", "short_trend", "short_none", "no_queued", "lent_names",
                "no_trend")

def meter_text(m: ClusterMeter, unit: str, width: int = 40) -> Text:
    """`GPU [███████▒▒░░░░] used 40 · free 16 · stranded 8 of 64`."""
    t = Text()
    t.append(f"{unit.upper():<4}", style="bold")
    if not m.total:
        t.append(f" used {num(m.used)} (no node inventory from this source)")
        return t
    used = round(m.used / m.total * width)
    stranded = round(m.stranded / m.total * width)
    free = max(0, width - used - stranded)
    t.append("▕")
    t.append("█" * used, style="green")
    t.append("▒" * stranded, style="red")
    t.append("░" * free, style="dim")
    t.append("▏ ")
    t.append(f"used {num(m.used)}", style="green")
    t.append(" · ")
    t.append(f"free {num(m.free)}")
    t.append(" · ")
    t.append(f"stranded {num(m.stranded)}", style="red" if m.stranded else "")
    t.append(f" of {num(m.total)}")
    return t


def _read(obj: Any, *names: str) -> Any:
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if v is not None:
            return v
    return None


def carried_incidents(snap: Any) -> list[str]:
    """Incidents a source may put on its snapshot itself; read defensively:
    any object or dict with a title/summary."""
    out = []
    for inc in getattr(snap, "incidents", None) or []:
        if _read(inc, "closed", "resolved", "ended_at"):
            continue
        title = _read(inc, "title", "summary", "kind", "message") or str(inc)
        sev = _read(inc, "severity", "level") or ""
        team = _read(inc, "team")
        out.append(" ".join(x for x in (f"[{sev}]" if sev else "", str(title),
                                         f"({team})" if team else "") if x))
    return out


open_incidents = carried_incidents  # the name the first tests used


def tree_cell(r: TeamRow) -> Text:
    """The team's name in the account tree: a child under its parent (its usage is part
    of the parent's, rolled up), a parent marked ▾ open or ▸ folded (+N hidden)."""
    t = Text("  " * (r.depth - 1) + "└ " if r.depth else "")
    if r.kids:
        t.append("▸ " if r.folded else "▾ ", style="bold")
    t.append(r.name, style=team_style(r.name))
    if r.folded:
        t.append(f" +{r.kids}", style="dim")
    return t


def team_cells(data: ViewData, steps: frozenset[str]) -> tuple[list[tuple[str, str]],
                                                                 list[list[Text]]]:
    """The columns and one row of cells per team for a layout that applied
    ``steps`` of SHRINK_STEPS."""
    snap, d = data.snap, data.derived
    teams = {t.name: t for t in snap.teams}
    cols = []
    for key, label in COLUMNS:
        if key == "pending" and "merge_jobs" in steps:
            continue
        if key == "running" and "merge_jobs" in steps:
            key, label = "jobs", "run/pend"
        if (key == "trend" and "no_trend" in steps) or (key == "queued" and "no_queued" in steps):
            continue
        cols.append((key, label))
    trend_w = NARROW_TREND if "short_trend" in steps else TREND_WIDTH
    # One scale for every row: a team at 0 draws at the floor, not as its own peak.
    top = trend_top(data.history, [r.name for r in d.teams], trend_w)
    if "short_trend" not in steps:  # the scale, where the title has room for it
        cols = [(k, f"trend ≤{num(top)}") if k == "trend" else (k, t) for k, t in cols]
    rows = []
    for r in d.teams:
        if r.guarantee is None:
            text = no_guarantee(teams.get(r.name), snap)
            if "short_none" in steps:  # "no guarantee (Slurm)" → "— (Slurm)"
                text = DASH + text.removeprefix("no guarantee")
            guarantee = Text(text, style="italic dim")
        else:
            guarantee = Text(num(r.guarantee))
        borrowed = num(r.borrowed) if r.borrowed else ("0" if r.guarantee is not None else DASH)
        if r.borrowed_from:
            borrowed += " ← " + ",".join(sorted(r.borrowed_from))
        lent = num(r.lent) if r.guarantee is not None else DASH
        if r.lent_to:
            lent += " →" + ("" if "lent_names" in steps else " " + ",".join(sorted(r.lent_to)))
        util = r.utilization
        cells = {
            "team": tree_cell(r), "guarantee": guarantee,
            "max": Text(num(r.max)), "used": Text(num(r.used)),
            "borrowed": Text(borrowed, style="yellow" if r.borrowed else ""), "lent": Text(lent),
            "running": Text(str(r.running)), "pending": Text(str(r.pending)),
            "jobs": Text(f"{r.running}/{r.pending}"), "queued": Text(num(r.queued)),
            "util": Text(pct(util), style="red" if util is not None and util > 1.0 else ""),
            "trend": Text(sparkline(data.history.get(r.name, []), trend_w, top=top),
                          style=team_style(r.name)),
        }
        rows.append([cells[k] for k, _ in cols])
    return cols, rows


def trend_top(history: dict[str, list[float]], names: list[str], width: int) -> float:
    """The highest value any shown row's sparkline draws (at least 1)."""
    return max([1.0, *(v for n in names for v in history.get(n, [])[-width:])])


def fit_team_table(data: ViewData, width: int) -> tuple[Columns, Rows]:
    """The widest layout that fits ``width`` cells, shrinking in SHRINK_STEPS order."""
    cols, rows, _ = fit_layout(lambda steps: team_cells(data, steps), SHRINK_STEPS, width)
    return cols, rows


class OverviewView(View):
    title = "Overview"

    _waits_for: tuple[int, int, float] | None = None
    _waits_cache: dict[str, float] = {}  # replaced whole, never mutated
    _waits_drawn: tuple[object, ...] | None = None  # the wait chart's inputs on screen

    # enter toggles too (the table's own enter selects the row: on_data_table_row_selected);
    # the footer names - and +, which the table leaves free.
    BINDINGS = [Binding("minus", "fold(True)", "Fold", key_display="-",
                        tooltip="fold a parent account (▸ folded)"),
                Binding("plus", "fold(False)", "Unfold", key_display="+",
                        tooltip="unfold a parent account (▾ open)")]
    HELP_EXTRA = (("enter", "fold / unfold a parent account (▾ open, ▸ folded)"),)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.folded: set[str] = set()  # parent accounts shown folded
        self._foldable: bool | None = None  # what the footer's fold key was last told

    def compose(self) -> ComposeResult:
        yield Static(id="meter")
        yield SortableTable(id="teams", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="below"):
            yield Static(id="incidents")
            yield Static(id="freshness")
        yield ChartPanel(id="charts")  # fills the height the table leaves

    def on_resize(self) -> None:
        self.repaint()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Fold keys only where there is a tree to fold (a flat source keeps its footer).
        if action == "fold":
            data: ViewData | None = getattr(self.app, "data", None)
            return data is not None and any(r.kids for r in data.derived.teams)
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_fold()

    def action_fold(self, fold: bool | None = None) -> None:
        """Fold (True), unfold (False) or toggle (None) the account under the cursor."""
        table = self.query_one("#teams", DataTable)
        if not table.row_count:
            return
        name = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        data: ViewData | None = getattr(self.app, "data", None)
        row = next((r for r in data.derived.teams if r.name == name), None) if data else None
        if row is None or not row.kids:
            return
        if fold is None:
            fold = name not in self.folded
        (self.folded.add if fold else self.folded.discard)(name)
        self.repaint()
        # Once more after the screen refreshed: a DataTable refilled in place draws a
        # column whose cells grew ("▸ org +3") at its old width until filled again.
        self.call_after_refresh(self.repaint)

    def show_data(self, data: ViewData) -> None:
        snap, d = data.snap, data.derived
        width = max(40, (self.size.width or 80) - 1)
        # The bar takes what its numbers leave: wider terminals draw a finer meter.
        bar = max(10, width - 2 - meter_text(d.meter, d.unit, 0).cell_len)
        update_static(self.query_one("#meter", Static), meter_text(d.meter, d.unit, bar))
        shown = visible_rows(d.teams, self.folded)
        # The fold key shows only where there is a tree: told when that changes, not
        # on every paint (each refresh_bindings rebuilds the footer's keys).
        foldable = any(r.kids for r in d.teams)
        if foldable != self._foldable:
            self._foldable = foldable
            self.refresh_bindings()
        data = replace(data, derived=replace(d, teams=shown))
        cols, rows = fit_team_table(data, width)
        fill_table(self.query_one("#teams", DataTable), cols, rows, [r.name for r in shown])
        inc = Text("Open incidents\n", style="bold")
        live = data.incidents.open
        carried = carried_incidents(snap)
        now = snap.taken_at or data.now
        for i in live[:5]:
            inc.append_text(incident_line(i, now))
            inc.append("\n")
        for line in carried[: max(0, 5 - len(live))]:
            inc.append(f"• {line}\n", style="red")
        more = len(live) + len(carried) - 5
        if more > 0:
            inc.append(f"… {more} more (8 Incidents)\n", style="dim")
        if not live and not carried:
            inc.append("none", style="dim")
        update_static(self.query_one("#incidents", Static), inc)
        fresh = Text("Source\n", style="bold")
        fresh.append(f"{snap.source or DASH}  ")
        if snap.taken_at and data.now == snap.taken_at:  # a replayed frame: say when it was
            fresh.append(f"frame at {clock_time(snap.taken_at)}")
        elif snap.taken_at:
            fresh.append(f"data {duration(data.now - snap.taken_at)} old")
        if snap.stale:
            fresh.append(f"  STALE: {snap.stale_reason or 'no reason given'}", style="red")
        for st in snap.status[:4]:
            mark = "✓" if st.ok else "✗"
            lat = f" {st.latency_ms:.0f} ms" if st.latency_ms is not None else ""
            fresh.append(f"\n{mark} {st.name}{lat}", style="" if st.ok else "red")
            if st.error:
                fresh.append(f" {st.error}", style="red")
        for w in snap.warnings[:2]:
            fresh.append(f"\n! {w}", style="yellow")
        fp = data.footprint
        if fp is not None:
            fresh.append(
                # One line in the half-width panel at 80 columns.
                f"\nquotatop {fp.rss_mb:.0f} MB · {fp.cpu_percent:.0f}% CPU · {fp.threads} threads",
                style="dim",
            )
        update_static(self.query_one("#freshness", Static), fresh)
        panel = self.query_one(ChartPanel)
        # The table first: charts only in the rows it leaves, and none squeezed below
        # what can be read (a long account tree keeps every row it can).
        below = self.query_one("#below").outer_size.height or 5
        panel.display = self.size.height - 1 - below - (len(rows) + 1) >= MIN_H
        if not panel.display:
            return
        samples = data.charts.samples()
        points = team_points(samples, snap.utilization, [r.name for r in d.teams])
        # New data is painted at once with the core's previous answer, and again when
        # the new answer lands: the wait chart keeps its drawing until then (a chart of
        # the old answer at a new moment is a redraw that says nothing new).
        waits_key = (data.snap, data.predictions, data.now)
        if data.predictions.pending and self._waits_drawn is not None:
            waits_key = self._waits_drawn
        self._waits_drawn = waits_key
        panel.show(d, samples, points, lambda: self._waits(data), waits_key)

    def _waits(self, data: ViewData) -> dict[str, float]:
        """Per team predicted waits, once per snapshot and predictions (100k pending
        jobs: ~80 ms), not again on a resize or an incident's repaint."""
        key = (id(data.snap), id(data.predictions), data.now)
        if self._waits_for != key:
            self._waits_for, self._waits_cache = key, team_waits(data.snap, data.predictions,
                                                                 data.now)
        return self._waits_cache
