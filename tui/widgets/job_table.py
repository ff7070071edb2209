"""A windowed job table: paints only the rows on screen (Textual's Line API), so
100k jobs cost what 30 do. Stock DataTable builds every row up front.

Sorting and filtering reorder a list of references; formatting happens per
visible line in ``render_line``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from quotatop.collectors.model import PENDING, RUNNING, Job
from quotatop.tui.filtering import JobFilter
from quotatop.tui.format import DASH, duration, num, until
from quotatop.tui.predictions import Predictions
from quotatop.tui.theme_colors import team_style
from quotatop.tui.widgets.cursor import CURSOR_BINDINGS, CursorList
from quotatop.tui.widgets.sortable_table import letter_column


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    text: Callable[[Job, TableContext], str]
    sort: Callable[[Job, TableContext], Any]
    right: bool = False


@dataclass
class TableContext:
    now: float
    unit: str
    predictions: Predictions
    # job id -> mean GPU utilization percent over the exporter's window (Snapshot.gpu_util);
    # None inside: held but never sampled. A job not in it: the source has no GPU data.
    gpu_util: dict[str, float | None] = field(default_factory=dict)


def _opt(v: float | None) -> tuple[bool, float]:
    return (v is None, v or 0.0)


def _start_text(j: Job, c: TableContext) -> str:
    if j.state == RUNNING:
        return "ran " + duration(c.now - j.start_time) if j.start_time else "running"
    if j.state == PENDING:
        return until(c.predictions.start(j), c.now)
    return DASH


def _start_key(j: Job, c: TableContext) -> tuple[bool, float]:
    if j.state == RUNNING:
        return (False, j.start_time or 0.0)
    return _opt(c.predictions.start(j))


def _where_text(j: Job, c: TableContext) -> str:
    nodes = j.nodes if j.state == RUNNING else list(c.predictions.get(j).nodes)
    if not nodes:
        return DASH
    return nodes[0] if len(nodes) == 1 else f"{nodes[0]}+{len(nodes) - 1}"


def _util_text(j: Job, c: TableContext) -> str:
    if j.id not in c.gpu_util:
        return DASH
    u = c.gpu_util[j.id]
    return "?" if u is None else f"{u:.0f}%"


def _util_key(j: Job, c: TableContext) -> tuple[bool, float]:
    return _opt(c.gpu_util.get(j.id))


def _reason_text(j: Job, c: TableContext) -> str:
    if j.state != PENDING:
        return ""
    return c.predictions.get(j).binding or DASH


STATE_SHORT = {"running": "run", "pending": "pend", "suspended": "susp", "completed": "done",
               "failed": "fail", "cancelled": "canc", "preempted": "prmt", "timeout": "tout",
               "node_fail": "nfal", "out_of_memory": "oom", "boot_fail": "bfal",
               "deadline": "dead"}

COLUMNS: tuple[Column, ...] = (
    Column("id", "JOBID", 9, lambda j, c: j.id, lambda j, c: (len(j.id), j.id)),
    Column("user", "USER", 7, lambda j, c: j.user, lambda j, c: j.user),
    Column("team", "TEAM", 7, lambda j, c: j.team, lambda j, c: j.team),
    Column("qos", "QOS", 6, lambda j, c: j.qos, lambda j, c: j.qos),
    Column("state", "ST", 4, lambda j, c: STATE_SHORT.get(j.state, j.state),
           lambda j, c: j.state),
    Column("amount", "GPU", 4, lambda j, c: num(j.request.get(c.unit)),
           lambda j, c: j.request.get(c.unit, 0.0), right=True),
    Column("nodes_req", "N", 2, lambda j, c: str(j.nodes_requested),
           lambda j, c: j.nodes_requested, right=True),
    # AGE and START hold the human duration's widest common forms ("7h59m", "9m59s",
    # "7d23h": 5 cells; "ran 7h59m": 9), so a two-unit age is not cut to "7h5…".
    Column("age", "AGE", 5, lambda j, c: duration(c.now - j.submit_time) if j.submit_time else DASH,
           lambda j, c: -j.submit_time, right=True),
    Column("start", "START", 9, _start_text, _start_key),
    Column("util", "UTIL", 4, _util_text, _util_key, right=True),
    Column("reason", "PENDING REASON", 44, _reason_text, lambda j, c: _reason_text(j, c)),
    Column("where", "NODES", 12, _where_text, lambda j, c: _where_text(j, c)),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
# What a narrow terminal gives up, in order, before the pending reason gets less
# than REASON_MIN cells: GPU UTIL, NODES, then N (Enter shows them in the job's detail).
# The reason takes what the other columns leave, up to its full width.
NARROW_DROP = ("util", "where", "nodes_req")
REASON_MIN = 30
# Columns that widen to their longest text (up to these) when the reason has its
# REASON_MIN: on a wide terminal a team or user name is not cut with room to spare.
GROWS = {"id": 16, "user": 16, "team": 24}
SAMPLED = 2000  # jobs read for those widths: 100k jobs must not cost a pass each refresh


def content_widths(jobs: list[Job]) -> dict[str, int]:
    """The longest id, user and team among ``jobs`` (an even sample of them)."""
    step = max(1, len(jobs) // SAMPLED)
    sample = jobs[::step]
    return {"id": max((len(j.id) for j in sample), default=0),
            "user": max((len(j.user) for j in sample), default=0),
            "team": max((len(j.team) for j in sample), default=0)}


def fit_columns(width: int, wants: dict[str, int] | None = None) -> tuple[Column, ...]:
    """The columns of a table ``width`` cells wide (each column plus one space).
    The pending reason takes what the others leave, with no cap: free text is
    worth every cell a wide terminal has."""
    cols = list(COLUMNS)
    for key in (None, *NARROW_DROP):
        if key is not None:
            cols = [c for c in cols if c.key != key]
        room = width - sum(c.width + 1 for c in cols if c.key != "reason") - 1
        if room >= REASON_MIN:
            break
    grown = {}
    for key, cap in GROWS.items():  # only from what the reason can spare
        base = next(c.width for c in COLUMNS if c.key == key)
        extra = min(max(0, min((wants or {}).get(key, 0), cap) - base),
                    max(0, room - REASON_MIN))
        grown[key] = base + extra
        room -= extra
    reason = max(room, len("PENDING REASON"))
    return tuple(replace(c, width=reason) if c.key == "reason"
                 else replace(c, width=grown[c.key]) if c.key in grown else c for c in cols)


def _fit(text: str, width: int, right: bool) -> str:
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)


_SCROLL = Binding.Group("scroll columns")


class JobTable(CursorList):
    """Every job; cursor, sort and filter; Enter posts ``JobTable.Opened``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *CURSOR_BINDINGS,
        # ←/→ switch screens (tui/habits.py); at 80 columns nothing needs a sideways scroll.
        Binding("h", "scroll_columns(-8)", "Left", show=False, group=_SCROLL),
        Binding("l", "scroll_columns(8)", "Right", show=False, group=_SCROLL),
        Binding("enter", "open", "Detail", tooltip="job detail (esc closes)"),
        Binding("s", "sort_next", "Sort", tooltip="sort by the next column"),
        Binding("S", "sort_reverse", "Reverse", show=False, tooltip="reverse the sort"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "jobtable--header", "jobtable--cursor", "jobtable--pending", "jobtable--dim",
    }

    class Opened(Message):
        def __init__(self, job: Job) -> None:
            super().__init__()
            self.job = job

    class Sorted(Message):
        """The sort column or direction changed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.jobs: list[Job] = []
        self.rows: list[Job] = []
        self.context = TableContext(now=0.0, unit="gpu", predictions=Predictions())
        self.filter = JobFilter("")
        self.sort_key: str | None = None
        self.sort_reverse = False
        self.columns: tuple[Column, ...] = COLUMNS
        self._released_at: str | None = None
        self._width = sum(c.width + 1 for c in COLUMNS)
        self._wants: dict[str, int] = {}

    def on_resize(self) -> None:
        self._relayout()

    def _relayout(self) -> None:
        # Room for a vertical scrollbar is kept whether it shows or not: the
        # columns must not change when a filter shortens the list.
        width = self.size.width - self.styles.scrollbar_size_vertical
        if width <= 0:
            return
        columns = fit_columns(width, self._wants)
        if columns != self.columns:
            self.columns = columns
            self._width = sum(c.width + 1 for c in columns)
            self.virtual_size = Size(self._width, len(self.rows) + 1)
            self.refresh()

    # data ------------------------------------------------------------------
    def set_jobs(self, jobs: list[Job], context: TableContext) -> None:
        keep = self.current_job()
        self.jobs = jobs
        self.context = context
        wants = content_widths(jobs)
        if wants != self._wants:
            self._wants = wants
            self._relayout()
        self._reorder(keep.id if keep else self._released_at)
        self._released_at = None

    def release(self) -> None:
        """Drop the jobs (hidden, a newer snapshot arrived); the cursor comes back
        to the same job when ``set_jobs`` paints the new ones."""
        keep = self.current_job()
        self._released_at = keep.id if keep else None
        self.jobs, self.rows = [], []
        self.context = TableContext(now=self.context.now, unit=self.context.unit,
                                    predictions=Predictions())

    def set_filter(self, query: str) -> None:
        self.filter = JobFilter(query)
        self._reorder(None)
        self.cursor = 0

    def sort_by(self, key: str | None, reverse: bool = False) -> None:
        self.sort_key, self.sort_reverse = key, reverse
        keep = self.current_job()
        self._reorder(keep.id if keep else None)
        self.post_message(self.Sorted())

    def _reorder(self, keep_id: str | None) -> None:
        rows = self.filter.apply(self.jobs)
        if self.sort_key is not None:
            col = next(c for c in COLUMNS if c.key == self.sort_key)
            ctx = self.context
            rows = sorted(rows, key=lambda j: col.sort(j, ctx), reverse=self.sort_reverse)
        self.rows = rows  # may be the snapshot's own list: never changed in place
        self.virtual_size = Size(self._width, len(rows) + 1)
        if keep_id is not None:
            at = self.cursor
            if not (at < len(rows) and rows[at].id == keep_id):
                at = next((i for i, j in enumerate(rows) if j.id == keep_id), at)
            self.cursor = min(at, max(0, len(rows) - 1))
        else:
            self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self.refresh()

    def current_job(self) -> Job | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    # painting --------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            return self._header().crop(scroll_x, scroll_x + width).extend_cell_length(
                width, self.get_component_rich_style("jobtable--header"))
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        return self._row(index).crop(scroll_x, scroll_x + width).extend_cell_length(
            width, self._row_style(index))

    def _header(self) -> Strip:
        style = self.get_component_rich_style("jobtable--header")
        segs = []
        for c in self.columns:
            title = c.title
            if c.key == "amount":
                title = self.context.unit.upper()[:4]
            if c.key == self.sort_key:
                title = title + ("▼" if self.sort_reverse else "▲")
            segs.append(Segment(_fit(title, c.width, c.right) + " ", style))
        return Strip(segs)

    def _row_style(self, index: int) -> Style:
        base = self.rich_style
        if index == self.cursor:
            return base + self.get_component_rich_style("jobtable--cursor")
        return base

    def _row(self, index: int) -> Strip:
        job = self.rows[index]
        ctx = self.context
        base = self._row_style(index)
        pending = self.get_component_rich_style("jobtable--pending", partial=True)
        dim = self.get_component_rich_style("jobtable--dim", partial=True)
        segs = []
        for c in self.columns:
            style = base
            if c.key == "team":
                style = base + team_style(job.team)
            elif c.key == "state" and job.state == PENDING:
                style = base + pending
            elif c.key in ("reason", "age"):
                style = base + dim
            segs.append(Segment(_fit(c.text(job, ctx), c.width, c.right) + " ", style))
        return Strip(segs)

    def row_count(self) -> int:
        return len(self.rows)

    # actions ---------------------------------------------------------------
    def action_scroll_columns(self, delta: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + delta), animate=False)

    def action_open(self) -> None:
        job = self.current_job()
        if job is not None:
            self.post_message(self.Opened(job))

    def action_sort_next(self) -> None:
        keys: list[str | None] = [None, *COLUMN_KEYS]
        nxt = keys[(keys.index(self.sort_key) + 1) % len(keys)]
        self.sort_by(nxt, self.sort_reverse)

    def action_sort_reverse(self) -> None:
        self.sort_by(self.sort_key or COLUMN_KEYS[0], not self.sort_reverse)

    def on_key(self, event: events.Key) -> None:
        """shift+letter: sort by the shown column whose title starts with it (k9s);
        the same letter again reverses. Letters bound elsewhere keep their key."""
        titles = [self.context.unit.upper()[:4] if c.key == "amount" else c.title
                  for c in self.columns]
        at = letter_column(event, titles, self.screen.active_bindings)
        if at is None:
            return
        event.stop()
        event.prevent_default()
        key = self.columns[at].key
        self.sort_by(key, not self.sort_reverse if self.sort_key == key else False)

    # mouse -----------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x + int(self.scroll_offset.x)
            for c in self.columns:
                if x < c.width + 1:
                    same = self.sort_key == c.key
                    self.sort_by(c.key, not self.sort_reverse if same else False)
                    return
                x -= c.width + 1
            return
        index = int(self.scroll_offset.y) + offset.y - 1
        if 0 <= index < len(self.rows):
            self.cursor = index
            if event.chain >= 2:
                self.action_open()
