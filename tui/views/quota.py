"""Quota (60-30-10): how capacity is split between teams, and quota beside limit.

The article's distinction: a *quota* is what a team may hold in total; a
*limit* is the most one job (or user) may take — LimitRange, QoS
MaxTRESPerJob, MaxWall. Both are shown side by side."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from quotatop.collectors.model import Resources
from quotatop.tui.format import DASH, duration, num
from quotatop.tui.table_fit import SCROLLBAR, Cell, Columns, Rows, fill_table, fit_layout, plain
from quotatop.tui.theme_colors import team_color
from quotatop.tui.views.base import View, ViewData, no_guarantee

BAR = 50


def _res(r: Resources | None, unit: str) -> str:
    if r is None:
        return DASH
    if unit in r:
        return num(r[unit])
    return ",".join(f"{k}={num(v)}" for k, v in sorted(r.items())) or DASH


def split_bar(parts: list[tuple[str, float]], capacity: float, width: int = BAR) -> Text:
    """Team segments laid end to end on a scale of max(capacity, sum); a `┃`
    marks physical capacity when quotas run past it."""
    total = sum(v for _, v in parts)
    scale = max(capacity, total) or 1.0
    t = Text("▕")
    used_cells = 0
    acc = 0.0
    for name, v in parts:
        acc += v
        cells = round(acc / scale * width) - used_cells  # cumulative: never overflows
        label = name[: max(0, cells)]
        seg = (label + " " * cells)[:cells]
        t.append(seg, style=f"bold #000000 on {team_color(name)}")
        used_cells += cells
    cap_cell = round(capacity / scale * width)
    if used_cells < cap_cell:
        t.append("░" * (cap_cell - used_cells), style="dim")
    t.append("▏")
    return t


# (key, title, short title). A narrow terminal gives up, in order: the longer
# titles, the share (the split bar above shows it too), MaxWall, lendable, the
# per-user limit; the highlighted team's dropped values show under the table.
QUOTA_COLUMNS = (("team", "team", "team"), ("guarantee", "quota (guarantee)", "guarantee"),
                 ("max", "max", "max"), ("lendable", "lendable", "lendable"),
                 ("share", "share", "share"), ("per_job", "per-job limit", "per job"),
                 ("per_user", "per-user", "per user"), ("max_wall", "max wall", "max wall"))
QUOTA_SHRINK = ("short_titles", "no_share", "no_max_wall", "no_lendable", "no_per_user")
QOS_COLUMNS = (("qos", "qos"), ("priority", "priority"), ("per_job", "per job"),
               ("per_user", "per user"), ("group", "group"), ("max_wall", "max wall"),
               ("preempts", "preempts"))
QOS_SHRINK = ("no_group",)


def quota_cells(data: ViewData) -> dict[str, dict[str, Cell]]:
    """Per team: every column's cell, whatever the layout shows."""
    snap, d = data.snap, data.derived
    unit, cap = d.unit, d.capacity
    teams = {t.name: t for t in snap.teams}
    out: dict[str, dict[str, Cell]] = {}
    for r in d.teams:
        t = teams[r.name]
        out[r.name] = {
            "team": Text(r.name, style=team_color(r.name)),
            "guarantee": (Text(num(r.guarantee)) if r.guarantee is not None
                          else Text(no_guarantee(t, snap), style="italic dim")),
            "max": num(r.max),
            "lendable": (_res(t.lendable, unit) if t.lendable is not None else
                         ("all unused" if r.guarantee is not None else DASH)),
            "share": f"{(r.quota or 0) / cap:.0%}" if cap and r.quota else DASH,
            "per_job": _res(t.per_job_limit, unit), "per_user": _res(t.per_user_limit, unit),
            "max_wall": duration(t.max_wall) if t.max_wall else DASH,
        }
    return out


def quota_layout(cells: dict[str, dict[str, Cell]], steps: frozenset[str]
                 ) -> tuple[Columns, Rows]:
    cols = [(key, short if "short_titles" in steps else title)
            for key, title, short in QUOTA_COLUMNS if f"no_{key}" not in steps]
    return cols, [[row[k] for k, _ in cols] for row in cells.values()]


def qos_layout(data: ViewData, steps: frozenset[str]) -> tuple[Columns, Rows]:
    unit = data.derived.unit
    cols = [(k, title) for k, title in QOS_COLUMNS if f"no_{k}" not in steps]
    rows = []
    for q in sorted(data.snap.qos, key=lambda q: -q.priority):
        cells: dict[str, Cell] = {
            "qos": q.name, "priority": str(q.priority), "per_job": _res(q.max_tres_per_job, unit),
            "per_user": _res(q.max_tres_per_user, unit), "group": _res(q.grp_tres, unit),
            "max_wall": duration(q.max_wall) if q.max_wall else DASH,
            "preempts": ",".join(q.preempts) or DASH}
        rows.append([cells[k] for k, _ in cols])
    return cols, rows


class QuotaView(View):
    title = "Quota"

    def compose(self) -> ComposeResult:
        yield Static(id="warning")
        yield Static(id="split")
        yield Static("Quota is a team's total; a limit caps one job or user.", classes="caption")
        yield DataTable(id="quota-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="quota-detail")
        yield Static("QoS limits (per job / per user / wall)", classes="caption")
        yield DataTable(id="qos-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="qos-empty", classes="caption")

    def on_mount(self) -> None:
        self._cells: dict[str, dict[str, Cell]] = {}
        self._dropped: list[tuple[str, str]] = []

    def on_resize(self) -> None:
        self.repaint()

    def show_data(self, data: ViewData) -> None:
        snap, d = data.snap, data.derived
        unit = d.unit
        cap = d.capacity
        warn = self.query_one("#warning", Static)
        if d.overcommit and cap is not None:
            warn.update(f"⚠ over-committed: quotas add up to {num(d.guarantee_sum)} {unit} "
                        f"but the cluster has {num(cap)} — guarantees cannot all be honoured")
        warn.display = bool(d.overcommit and cap is not None)  # no blank line at 24 rows
        split = Text()
        teams = {t.name: t for t in snap.teams}
        if cap:
            has_g = any(r.guarantee is not None for r in d.teams)
            basis = [(r.name, (r.guarantee if has_g else r.max) or 0.0) for r in d.teams]
            parts = [(n, v) for n, v in basis if v]
            width = max(20, (self.size.width or 80) - 16)
            split.append(f"capacity {num(cap)} {unit} physical — the bar's full width\n",
                         style="dim")
            split.append(f"{'guarantee' if has_g else 'max':<10}", style="bold")
            split.append_text(split_bar(parts, cap, width))
            split.append("\n" + " " * 10)
            split.append("  ".join(f"{n} {num(v)} ({v / cap:.0%})" for n, v in parts),
                         style="dim")
            if has_g:
                maxes = [(r.name, r.max or 0.0) for r in d.teams if r.max]
                split.append("\nmax       ", style="bold")
                split.append_text(split_bar(maxes, cap, width))
                split.append("\n          borrowing ceilings: past capacity is normal",
                             style="dim")
                for r in d.teams:
                    if r.guarantee is None:
                        split.append(f"\n{r.name}: {no_guarantee(teams.get(r.name), snap)}"
                                     f", max {num(r.max)} only", style="italic dim")
        else:
            split.append("no node inventory: capacity unknown", style="dim")
        self.query_one("#split", Static).update(split)

        room = (self.size.width or 80) - SCROLLBAR
        self._cells = quota_cells(data)
        cols, rows, _ = fit_layout(lambda steps: quota_layout(self._cells, steps),
                                   QUOTA_SHRINK, room)
        shown = {k for k, _ in cols}
        self._dropped = [(k, title) for k, title, _ in QUOTA_COLUMNS if k not in shown]
        qt = self.query_one("#quota-table", DataTable)
        fill_table(qt, cols, rows, list(self._cells))
        self._detail(qt.cursor_row)
        qos_table = self.query_one("#qos-table", DataTable)
        qos_empty = self.query_one("#qos-empty", Static)
        qos_table.display, qos_empty.display = bool(snap.qos), not snap.qos
        if not snap.qos:  # say what is empty and why, not a bare header
            # A Text: the source's name is not markup.
            qos_empty.update(Text(f"no QoS limits: {snap.source or 'the source'} reports no "
                                  "QoS (Slurm: sacctmgr show qos; Kubernetes: PriorityClasses "
                                  "and pod QoS classes)"))
            return
        cols, rows, _ = fit_layout(lambda steps: qos_layout(data, steps), QOS_SHRINK, room,
                                   flex=("preempts",))
        fill_table(qos_table, cols, rows,
                   [q.name for q in sorted(snap.qos, key=lambda q: -q.priority)])

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "quota-table":
            self._detail(event.cursor_row)

    def _detail(self, row: int) -> None:
        """The highlighted team's values that the table dropped to fit the width."""
        t = Text()
        names = list(self._cells)
        if self._dropped and 0 <= row < len(names):
            cells = self._cells[names[row]]
            t.append(names[row], style=team_color(names[row]))
            t.append(": " + " · ".join(f"{title} {plain(cells[k])}"
                                        for k, title in self._dropped))
        self.query_one("#quota-detail", Static).update(t)
