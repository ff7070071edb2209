"""Quota (60-30-10): how capacity is split between teams, and quota beside limit.

The article's distinction: a *quota* is what a team may hold in total; a
*limit* is the most one job (or user) may take — LimitRange, QoS
MaxTRESPerJob, MaxWall. Both are shown side by side."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from collectors.model import Resources
from tui.format import DASH, duration, num
from tui.theme_colors import team_color
from tui.views.base import View, ViewData, no_guarantee

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


class QuotaView(View):
    title = "Quota"
    DEFAULT_CSS = """
    QuotaView #warning { height: auto; padding: 0 1; color: $error; text-style: bold; }
    QuotaView #split { height: auto; padding: 0 1 1 1; }
    QuotaView DataTable { height: auto; max-height: 1fr; margin-bottom: 1; }
    QuotaView .caption { padding: 0 1; color: $text-muted; height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="warning")
        yield Static(id="split")
        yield Static("Quota is a team's total; a limit caps one job or user.", classes="caption")
        yield DataTable(id="quota-table", cursor_type="row", zebra_stripes=True)
        yield Static("QoS limits (per job / per user / wall)", classes="caption")
        yield DataTable(id="qos-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#quota-table", DataTable).add_columns(
            "team", "quota (guarantee)", "max", "lendable", "share", "per-job limit",
            "per-user", "max wall")
        self.query_one("#qos-table", DataTable).add_columns(
            "qos", "priority", "per job", "per user", "group", "max wall", "preempts")

    def show_data(self, data: ViewData) -> None:
        snap, d = data.snap, data.derived
        unit = d.unit
        cap = d.capacity
        warn = self.query_one("#warning", Static)
        if d.overcommit and cap is not None:
            warn.update(f"⚠ over-committed: quotas add up to {num(d.guarantee_sum)} {unit} "
                        f"but the cluster has {num(cap)} — guarantees cannot all be honoured")
        else:
            warn.update("")
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

        teams = {t.name: t for t in snap.teams}
        qt = self.query_one("#quota-table", DataTable)
        qt.clear()
        for r in d.teams:
            t = teams[r.name]
            g = (Text(num(r.guarantee)) if r.guarantee is not None
                 else Text(no_guarantee(t, snap), style="italic dim"))
            share = f"{(r.quota or 0) / cap:.0%}" if cap and r.quota else DASH
            qt.add_row(Text(r.name, style=team_color(r.name)), g, num(r.max),
                       _res(t.lendable, unit) if t.lendable is not None else
                       ("all unused" if r.guarantee is not None else DASH),
                       share, _res(t.per_job_limit, unit), _res(t.per_user_limit, unit),
                       duration(t.max_wall) if t.max_wall else DASH, key=r.name)
        qos = self.query_one("#qos-table", DataTable)
        qos.clear()
        for q in sorted(snap.qos, key=lambda q: -q.priority):
            qos.add_row(q.name, str(q.priority), _res(q.max_tres_per_job, unit),
                        _res(q.max_tres_per_user, unit), _res(q.grp_tres, unit),
                        duration(q.max_wall) if q.max_wall else DASH,
                        ",".join(q.preempts) or DASH, key=q.name)
