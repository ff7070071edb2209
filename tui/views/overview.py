"""Overview: one row per team, the cluster meter, open incidents, freshness."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from tui.derive import ClusterMeter
from tui.format import DASH, duration, num, pct, sparkline
from tui.theme_colors import team_style
from tui.views.base import View, ViewData, no_guarantee

COLUMNS = (("team", "team"), ("guarantee", "guarantee"), ("max", "max"), ("used", "used"),
           ("borrowed", "borrowed"), ("lent", "lent"), ("running", "run"),
           ("pending", "pend"), ("queued", "queued"), ("util", "util"), ("trend", "trend"))
TREND_WIDTH = 10


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


def open_incidents(snap: Any) -> list[str]:
    """Incidents a snapshot may carry (added by the incident detector later);
    read defensively: any object or dict with a title/summary."""
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


class OverviewView(View):
    title = "Overview"
    DEFAULT_CSS = """
    OverviewView #meter { height: 1; padding: 0 1; }
    OverviewView #teams { height: auto; max-height: 1fr; }
    OverviewView #below { height: auto; min-height: 4; }
    OverviewView #incidents, OverviewView #freshness { width: 1fr; padding: 0 1;
        border-top: solid $panel-lighten-2; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="meter")
        yield DataTable(id="teams", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="below"):
            yield Static(id="incidents")
            yield Static(id="freshness")

    def on_mount(self) -> None:
        table = self.query_one("#teams", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)

    def show_data(self, data: ViewData) -> None:
        snap, d = data.snap, data.derived
        self.query_one("#meter", Static).update(meter_text(d.meter, d.unit))
        table = self.query_one("#teams", DataTable)
        table.clear()
        teams = {t.name: t for t in snap.teams}
        for r in d.teams:
            if r.guarantee is None:
                guarantee = Text(no_guarantee(teams.get(r.name), snap), style="italic dim")
            else:
                guarantee = Text(num(r.guarantee))
            borrowed = num(r.borrowed) if r.borrowed else ("0" if r.guarantee is not None
                                                           else DASH)
            if r.borrowed_from:
                borrowed += " ← " + ",".join(sorted(r.borrowed_from))
            lent = num(r.lent) if r.guarantee is not None else DASH
            if r.lent_to:
                lent += " → " + ",".join(sorted(r.lent_to))
            util = r.utilization
            ustyle = "red" if util is not None and util > 1.0 else ""
            hist = data.history.get(r.name, [])
            table.add_row(
                Text(r.name, style=team_style(r.name)),
                guarantee, Text(num(r.max)), Text(num(r.used)),
                Text(borrowed, style="yellow" if r.borrowed else ""), Text(lent),
                Text(str(r.running)), Text(str(r.pending)),
                Text(num(r.queued)), Text(pct(util),
                                                           style=ustyle),
                Text(sparkline(hist, TREND_WIDTH, top=r.max or r.quota), style=team_style(r.name)),
                key=r.name,
            )
        incidents = open_incidents(snap)
        inc = Text("Open incidents\n", style="bold")
        if incidents:
            for line in incidents[:6]:
                inc.append(f"• {line}\n", style="red")
        else:
            inc.append("none", style="dim")
        self.query_one("#incidents", Static).update(inc)
        fresh = Text("Source\n", style="bold")
        fresh.append(f"{snap.source or DASH}  ")
        fresh.append(f"data {duration(data.now - snap.taken_at)} old" if snap.taken_at else "")
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
        self.query_one("#freshness", Static).update(fresh)
