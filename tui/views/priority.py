"""Priority: pending jobs in scheduler order with their factor breakdown, the
fair-share tree, and what a high-QoS job would preempt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from collectors.model import Job, PriorityFactors, Snapshot
from tui.derive import pending_in_order, preemption_victims, preemptor
from tui.format import DASH, duration, num
from tui.table_fit import Cell, Columns, Rows, fill_table, layout_width
from tui.theme_colors import team_style
from tui.views.base import View, ViewData
from tui.widgets.pending_list import PendingList, team_cell

# Glyph and colour per factor, so the bars read without colour too (NO_COLOR).
FACTORS = (("age", "█", "#5fafff"), ("fairshare", "▓", "#87d787"), ("qos", "▒", "#ffaf5f"),
           ("job_size", "░", "#d787d7"), ("partition", "▚", "#ffd75f"))
FACTOR_BAR = 28


def factor_values(f: PriorityFactors | None) -> list[float]:
    if f is None:
        return [0.0] * len(FACTORS)
    return [max(0.0, float(getattr(f, k))) for k, _, _ in FACTORS]


def factor_bar(values: list[float], top: float, width: int = FACTOR_BAR) -> Text:
    t = Text()
    if top <= 0:
        return Text(DASH)
    cells = 0
    for v, (_, glyph, color) in zip(values, FACTORS, strict=True):
        n = round(v / top * width)
        t.append(glyph * n, style=color)
        cells += n
    return t


def legend() -> Text:
    t = Text("factors: ", style="dim")
    for name, glyph, color in FACTORS:
        t.append(f"{glyph}{glyph} ", style=color)
        t.append(f"{name}  ", style="dim")
    return t


def fairshare_rows(snap: Snapshot) -> list[tuple[int, str]]:
    """(depth, name) in tree order: children under their parent."""
    names = {t.name for t in snap.teams}
    kids: dict[str | None, list[str]] = {}
    for t in snap.teams:
        parent = t.parent if t.parent in names else None
        kids.setdefault(parent, []).append(t.name)
    out: list[tuple[int, str]] = []

    def walk(parent: str | None, depth: int) -> None:
        for n in sorted(kids.get(parent, [])):
            out.append((depth, n))
            walk(n, depth + 1)

    walk(None, 0)
    return out


FAIRSHARE_COLUMNS: Columns = [("account", "account"), ("shares", "shares"), ("norm", "norm"),
                              ("usage", "usage"), ("level_fs", "LevelFS"), ("factor", "F")]


def fairshare_layout(snap: Snapshot) -> tuple[Columns, Rows]:
    teams = {t.name: t for t in snap.teams}
    rows: list[list[Cell]] = []
    for depth, name in fairshare_rows(snap):
        t = teams[name]
        f = t.fairshare
        rows.append([Text("  " * depth + name, style=team_style(name)),
                     num(f.raw_shares if f and f.raw_shares is not None else t.shares),
                     f"{f.norm_shares:.2f}" if f and f.norm_shares is not None else DASH,
                     f"{f.effective_usage:.2f}" if f and f.effective_usage is not None
                     else DASH,
                     f"{f.level_fs:.2f}" if f and f.level_fs is not None else DASH,
                     f"{f.factor:.2f}" if f and f.factor is not None else DASH])
    return FAIRSHARE_COLUMNS, rows


class PriorityView(View):
    title = "Priority"
    DEFAULT_CSS = """
    PriorityView #legend { height: 1; padding: 0 1; }
    PriorityView #pending { height: 1fr; }
    PriorityView #lower { height: auto; max-height: 12; }
    PriorityView #fairshare-box, PriorityView #preempt { width: 1fr; }
    PriorityView #fairshare { height: auto; }
    PriorityView .caption { height: 1; padding: 0 1; text-style: bold; }
    PriorityView #preempt { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(legend(), id="legend")
        yield PendingList(id="pending")
        with Horizontal(id="lower"):
            with Vertical(id="fairshare-box"):
                yield Static("Fair-share tree", classes="caption")
                yield DataTable(id="fairshare", cursor_type="row")
            yield Static(id="preempt")

    def show_data(self, data: ViewData) -> None:
        snap = data.snap
        order = pending_in_order(snap)
        preds, now = data.predictions, data.now
        if preds.from_core:  # the core's order is the scheduler's order
            last = len(preds.by_id)
            order.sort(key=lambda j: last if (r := preds.rank(j)) is None else r)
        top = max((sum(factor_values(j.factors)) for j in order), default=0.0)
        plist = self.query_one(PendingList)

        def cells(i: int, j: Job) -> list[Text]:  # formatted only for rows on screen
            factors = preds.get(j).factors
            values = ([float(factors.get(k, 0.0)) for k, _, _ in FACTORS] if factors
                      else factor_values(j.factors))
            return [Text(str(i + 1)), Text(j.id), team_cell(j.team), Text(j.qos),
                    Text(num(j.priority)), factor_bar(values, top, plist.bar_width),
                    Text(duration(now - j.submit_time) if j.submit_time else DASH)]

        plist.set_rows(order, cells)
        cols, rows = fairshare_layout(snap)
        # The tree keeps its natural width; the preemption text beside it wraps.
        self.query_one("#fairshare-box").styles.min_width = layout_width(cols, rows)
        fill_table(self.query_one("#fairshare", DataTable), cols, rows,
                   [name for _, name in fairshare_rows(snap)])
        self.query_one("#preempt", Static).update(self._preempt_text(snap, data))

    def release(self) -> None:
        self.query_one(PendingList).release()

    def _preempt_text(self, snap: Snapshot, data: ViewData) -> Text:
        t = Text("Preemption\n", style="bold")
        job = preemptor(snap)
        if job is None:
            t.append("no pending job has a QoS that preempts", style="dim")
            return t
        unit = data.derived.unit
        t.append(f"{job.id} ({job.team}, qos {job.qos}, {num(job.request.get(unit))} {unit})",
                 style="bold")
        pred = data.predictions.get(job)
        victims: list[Job]
        if pred.preempts:
            by_id = {j.id: j for j in snap.jobs}
            victims = [by_id[v] for v in pred.preempts if v in by_id]
        else:
            victims = preemption_victims(snap, job)
        if not victims:
            t.append("\nfits without preempting anyone", style="green")
            return t
        t.append(" would preempt, in order:\n")
        short = (job.request.get(unit, 0.0) - data.derived.meter.free
                 - sum(v.request.get(unit, 0.0) for v in victims))
        for v in victims[:8]:
            cls = f" {v.qos_class}" if v.qos_class else ""
            t.append(f"  {v.id:<9}", style="red")
            t.append(f"{v.team:<8}", style=team_style(v.team))
            t.append(f"{v.qos}{cls}  {num(v.request.get(unit))} {unit}\n")
        if len(victims) > 8:
            t.append(f"  … {len(victims) - 8} more\n", style="dim")
        if short > 0:
            t.append(f"and would still wait for {num(short)} {unit} more", style="yellow")
        return t
