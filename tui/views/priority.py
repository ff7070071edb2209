"""Priority: pending jobs in scheduler order with their factor breakdown, the
fair-share tree, and what a high-QoS job would preempt.

The bars draw the scheduler's own factors when the source gives them (Slurm's
sprio, a demo's engine): the core's recomputation of them only where the source
has none, so the bar never contradicts the job detail. One scale for all rows."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from quotatop.collectors.model import Job, PriorityFactors, Snapshot
from quotatop.tui.derive import pending_in_order, preemptor
from quotatop.tui.format import DASH, duration, num
from quotatop.tui.predictions import CORE, FACTOR_KEYS, Predictions, core_available, core_top
from quotatop.tui.table_fit import Cell, Columns, Rows, fill_table, layout_width
from quotatop.tui.theme_colors import team_style
from quotatop.tui.views.base import View, ViewData
from quotatop.tui.widgets.pending_list import PendingList, team_cell

# Glyph and colour per factor, so the bars read without colour too (NO_COLOR).
# The bars' glyphs and colours, one per factor in FACTOR_KEYS' order.
FACTORS = tuple(zip(FACTOR_KEYS, ("█", "▓", "▒", "░", "▚"),
                    ("#5fafff", "#87d787", "#ffaf5f", "#d787d7", "#ffd75f"), strict=True))
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


def legend(prefix: str = "factors: ") -> Text:
    t = Text(prefix, style="dim")
    for name, glyph, color in FACTORS:
        t.append(f"{glyph}{glyph} ", style=color)
        t.append(f"{name}  ", style="dim")
    return t


def core_factor_values(preds: Predictions, j: Job) -> list[float] | None:
    factors = preds.get(j).factors
    return [max(0.0, float(factors.get(k, 0.0))) for k, _, _ in FACTORS] if factors else None


class FactorSource:
    """Where the bars' factors come from for one snapshot, and their one scale.

    The source's own (sprio) whenever any pending job carries them; else the core's,
    whose largest sum is looked up once per answer (a cursor move repaints rows, it
    does not decode the whole answer again)."""

    def __init__(self, order: list[Job], preds: Predictions) -> None:
        self.preds = preds
        self.from_source = any(j.factors is not None for j in order)
        if self.from_source:
            self.top = max((sum(factor_values(j.factors)) for j in order), default=0.0)
        else:
            self.top = core_top(preds)

    def values(self, j: Job) -> list[float] | None:
        if self.from_source:
            return factor_values(j.factors) if j.factors is not None else None
        return core_factor_values(self.preds, j)

    def words(self, source: str) -> str:
        if self.from_source:
            sprio = " (sprio)" if "slurm" in source.lower() else ""
            return f"factors as {source or 'the source'} reports them{sprio}:"
        if self.preds.from_core:
            return "factors as the core computes them (the source has none):"
        return "no priority factors: the source has none and the core has not answered"


def order_words(preds: Predictions, pending: int = 1) -> str:
    """Which order the pending list is in, in words (or why it is empty)."""
    if not pending:
        return "no pending jobs: every job the source reports is running or done"
    if preds.from_core:
        return "pending in the core's priority order (queue position first where given)"
    return "pending in priority order (the source's priority, then submit time)"


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


def _fixed(x: float | None) -> str:
    if x is None:
        return DASH
    return "∞" if x == float("inf") else f"{x:.2f}"


def has_fairshare(snap: Snapshot) -> bool:
    """Whether the source gave any fair-share state beyond raw shares."""
    return any(f is not None and (f.factor is not None or f.level_fs is not None
                                  or f.norm_shares is not None or f.effective_usage is not None)
               for f in (t.fairshare for t in snap.teams))


def fairshare_layout(snap: Snapshot) -> tuple[Columns, Rows]:
    teams = {t.name: t for t in snap.teams}
    rows: list[list[Cell]] = []
    for depth, name in fairshare_rows(snap):
        t = teams[name]
        f = t.fairshare
        rows.append([Text("  " * depth + name, style=team_style(name)),
                     num(f.raw_shares if f and f.raw_shares is not None else t.shares),
                     _fixed(f.norm_shares if f else None),
                     _fixed(f.effective_usage if f else None),
                     _fixed(f.level_fs if f else None),
                     _fixed(f.factor if f else None)])
    return FAIRSHARE_COLUMNS, rows


def no_fairshare_words(snap: Snapshot) -> str:
    if not snap.teams:
        return "no fair-share tree: the source reports no accounts or teams"
    return (f"no fair-share state: {snap.source or 'the source'} reports none "
            "(Slurm's sshare gives it; Kueue has no fair-share by default)")


class PriorityView(View):
    title = "Priority"

    def compose(self) -> ComposeResult:
        yield Static(legend(), id="legend")
        yield PendingList(id="pending")
        with Horizontal(id="lower"):
            with Vertical(id="fairshare-box"):
                yield Static("Fair-share tree", classes="caption")
                yield DataTable(id="fairshare", cursor_type="row")
                yield Static(id="fairshare-empty")
            yield Static(id="preempt")

    def show_data(self, data: ViewData) -> None:
        snap = data.snap
        order = pending_in_order(snap)
        preds, now = data.predictions, data.now
        if preds.from_core:  # the core's order is the scheduler's order
            last = len(preds.by_id)
            order.sort(key=lambda j: last if (r := preds.rank(j)) is None else r)
        factors = FactorSource(order, preds)
        top = factors.top
        caption = Text(f"{order_words(preds, len(order))}\n{factors.words(snap.source)}  ",
                       style="dim")
        self.query_one("#legend", Static).update(caption + legend(""))
        plist = self.query_one(PendingList)

        def cells(i: int, j: Job) -> list[Text]:  # formatted only for rows on screen
            values = factors.values(j)
            return [Text(str(i + 1)), Text(j.id), team_cell(j.team), Text(j.qos),
                    Text(num(j.priority)),
                    factor_bar(values, top, plist.bar_width) if values else Text(DASH),
                    Text(duration(now - j.submit_time) if j.submit_time else DASH)]

        plist.set_rows(order, cells)
        table = self.query_one("#fairshare", DataTable)
        empty = self.query_one("#fairshare-empty", Static)
        filled = has_fairshare(snap)
        table.display = filled
        empty.display = not filled
        if filled:
            cols, rows = fairshare_layout(snap)
            # The tree keeps its natural width; the preemption text beside it wraps.
            self.query_one("#fairshare-box").styles.min_width = layout_width(cols, rows)
            fill_table(table, cols, rows, [name for _, name in fairshare_rows(snap)])
        else:
            self.query_one("#fairshare-box").styles.min_width = None
            empty.update(Text(no_fairshare_words(snap)))  # the source's name is not markup
        self.query_one("#preempt", Static).update(self._preempt_text(snap, data))

    def release(self) -> None:
        self.query_one(PendingList).release()

    def _preempt_text(self, snap: Snapshot, data: ViewData) -> Text:
        t = Text("Preemption\n", style="bold")
        preds = data.predictions
        # The core is the only authority on preemption: until it has answered for this
        # snapshot the panel says so, and shows nothing of its own making.
        if not preds.from_core and (preds.taken_at is None or preds.error):
            t.append(waiting_words(preds), style="dim")
            return t
        by_id = {j.id: j for j in snap.jobs}
        # The first pending job the core predicts preempts. A job preempts when it
        # starts, so only those it starts at once are decoded (from the start column:
        # 100k pending rows are not decoded on every repaint).
        now = preds.taken_at if preds.taken_at is not None else snap.taken_at
        job = next((j for j in pending_in_order(snap)
                    if preds.start(j) == now and preds.get(j).preempts), None)
        if job is None:  # none preempts: say why for the job with the strongest claim
            job = preemptor(snap)
        if job is None:
            if not any(q.preempts for q in snap.qos):
                t.append("none: no QoS of this source preempts another", style="dim")
            else:
                t.append("none: no pending job has a QoS that preempts", style="dim")
            return t
        pred = preds.get(job)
        if pred.origin != CORE:  # a job newer than the core's answer
            t.append(waiting_words(preds), style="dim")
            return t
        unit = data.derived.unit
        t.append(f"{job.id} ({job.team}, qos {job.qos}, {num(job.request.get(unit))} {unit})",
                 style="bold")
        victims = [by_id[v] for v in pred.preempts if v in by_id]
        if not victims:
            if pred.start is not None and pred.start <= data.now:
                t.append("\nthe core predicts it starts now without preempting anyone",
                         style="green")
            else:
                t.append(f"\nthe core predicts no preemption: {pred.binding or 'it waits'}",
                         style="yellow")
            return t
        t.append(" would preempt, in order:\n")
        for v in victims[:8]:
            cls = f" {v.qos_class}" if v.qos_class else ""
            t.append(f"  {v.id:<9}", style="red")
            t.append(f"{v.team:<8}", style=team_style(v.team))
            t.append(f"{v.qos}{cls}  {num(v.request.get(unit))} {unit}\n")
        if len(victims) > 8:
            t.append(f"  … {len(victims) - 8} more\n", style="dim")
        return t


def waiting_words(preds: Predictions) -> str:
    """Why the Preemption panel has no answer of the core's to show."""
    if preds.error:
        return f"not predicted: {preds.error}"
    if not core_available():
        return "not predicted: this build has no scheduling core"
    return "waiting for the scheduling core…"
