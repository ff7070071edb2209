"""Elastic: per team, usage against its guarantee line and max line; what it
borrowed and from whom; what would be reclaimed first if a lender asks back."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from quotatop.tui.derive import TeamRow, reclaim_order
from quotatop.tui.format import DASH, duration, num
from quotatop.tui.table_fit import SCROLLBAR, Cell, Columns, Rows, fill_table, layout_width
from quotatop.tui.theme_colors import team_style
from quotatop.tui.views.base import View, ViewData, no_guarantee

GAUGE = 40


def gauge(r: TeamRow, scale: float, width: int = GAUGE) -> Text:
    """Usage as a bar; `│` marks the guarantee, `┆` the max. The part above the
    guarantee (borrowed) is drawn `▓` so it reads without colour."""
    scale = scale or 1.0
    cells = [" "] * width
    styles = [""] * width
    used = min(width, round(r.used / scale * width))
    g = round(r.guarantee / scale * width) if r.guarantee is not None else None
    m = round(r.max / scale * width) if r.max is not None else None
    for i in range(used):
        over = g is not None and i >= g
        cells[i] = "▓" if over else "█"
        styles[i] = "yellow" if over else str(team_style(r.name))
    for i in range(used, width):
        cells[i] = "·"
        styles[i] = "dim"
    # A marker sits in the cell just past its line; under the bar it would hide
    # usage, and there the ▓ run already shows where the guarantee ends.
    if m is not None and used <= m < width:
        cells[m], styles[m] = "┆", "bold red"
    if g is not None and used <= g < width:
        cells[g], styles[g] = "│", "bold"
    t = Text()
    for c, s in zip(cells, styles, strict=True):
        t.append(c, style=s)
    return t


BORROWED_COLUMNS: Columns = [("team", "team"), ("borrows", "borrows"), ("from", "from"),
                             ("lends_to", "lends to")]
RECLAIM_COLUMNS: Columns = [("lender", "lender"), ("job", "job"), ("team", "team"),
                            ("qos", "qos"), ("amount", "amount"), ("running", "running")]


class ElasticView(View):
    title = "Elastic"

    def compose(self) -> ComposeResult:
        yield Static(id="gauges")
        with Horizontal(id="tables"):
            with Vertical():
                yield Static("Borrowed", classes="caption")
                yield DataTable(id="borrowed", cursor_type="row")
            with Vertical():
                yield Static("Reclaimed first if lenders ask back (lowest priority, newest first)",
                             classes="caption")
                yield DataTable(id="reclaim", cursor_type="row")

    def show_data(self, data: ViewData) -> None:
        snap, d = data.snap, data.derived
        if not d.teams:
            self.query_one("#gauges", Static).update("no teams in this snapshot")
            return
        scale = max([r.max or 0.0 for r in d.teams] + [r.used for r in d.teams]
                    + [r.guarantee or 0.0 for r in d.teams]) or 1.0
        teams = {t.name: t for t in snap.teams}
        name_w = max([len(r.name) for r in d.teams] + [4])
        g = Text()
        g.append(" " * (name_w + 1) + "█ used  ▓ borrowed  │ guarantee  ┆ max\n", style="dim")
        suffix = {}
        for r in d.teams:
            gtext = (f"g {num(r.guarantee)}" if r.guarantee is not None
                     else no_guarantee(teams.get(r.name), snap))
            suffix[r.name] = f" {num(r.used)} · {gtext} · max {num(r.max)}"
        width = max(16, (self.size.width or 80) - name_w - 3
                    - max(len(x) for x in suffix.values()))
        for r in d.teams:
            g.append(f"{r.name:<{name_w}} ", style=team_style(r.name))
            g.append_text(gauge(r, scale, width))
            g.append(suffix[r.name] + "\n")
        g.rstrip()  # the CSS padding spaces it from the tables
        self.query_one("#gauges", Static).update(g)
        borrowed = borrowed_layout(data)
        reclaim = reclaim_layout(data)
        # Side by side while both fit; one above the other on a narrow terminal.
        half = (self.size.width or 80) // 2 - SCROLLBAR
        self.set_class(layout_width(*borrowed) > half or layout_width(*reclaim) > half,
                       "stacked")
        fill_table(self.query_one("#borrowed", DataTable), *borrowed,
                   [r.name for r in d.teams])
        fill_table(self.query_one("#reclaim", DataTable), *reclaim)

    def on_resize(self) -> None:
        self.repaint()


def borrowed_layout(data: ViewData) -> tuple[Columns, Rows]:
    snap, d = data.snap, data.derived
    teams = {t.name: t for t in snap.teams}
    rows: list[list[Cell]] = []
    for r in d.teams:
        if r.guarantee is None:
            rows.append([Text(r.name, style=team_style(r.name)), DASH,
                         Text(no_guarantee(teams.get(r.name), snap), style="dim italic"), DASH])
            continue
        rows.append([Text(r.name, style=team_style(r.name)),
                     num(r.borrowed) if r.borrowed else "0",
                     ", ".join(f"{n} {num(v)}" for n, v in sorted(r.borrowed_from.items()))
                     or DASH,
                     ", ".join(f"{n} {num(v)}" for n, v in sorted(r.lent_to.items())) or DASH])
    return BORROWED_COLUMNS, rows


def reclaim_layout(data: ViewData) -> tuple[Columns, Rows]:
    snap, d = data.snap, data.derived
    order = reclaim_order(snap, d.teams)
    rows: list[list[Cell]] = []
    if not order:  # what is empty, and why
        why = ("no team has a guarantee here, so none lends or borrows"
               if all(r.guarantee is None for r in d.teams)
               else "no team borrows now: every team is within its guarantee")
        rows.append([DASH, "nothing to reclaim", why, "", "", ""])
    for lender, picks in sorted(order.items()):
        for p in picks:
            j = p.job
            rows.append([Text(lender, style=team_style(lender)), j.id,
                         Text(j.team, style=team_style(j.team)), j.qos,
                         f"{num(p.amount)} {d.unit}",
                         duration(data.now - j.start_time) if j.start_time else DASH])
    return RECLAIM_COLUMNS, rows
