"""Priority's pending list, windowed: every pending job in scheduler order, only
the rows on screen formatted (Line API), so 100k pending cost what 30 do."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from collectors.model import Job
from tui.theme_colors import team_style

# (title, width, right-aligned)
HEADER = (("#", 6, True), ("job", 10, False), ("team", 8, False), ("qos", 7, False),
          ("priority", 9, True), ("factor breakdown", 28, False), ("wait", 5, True))

RowCells = Callable[[int, Job], list[Text]]


def _fit(text: Text, width: int, right: bool) -> Text:
    t = text.copy()
    if t.cell_len > width:
        t.truncate(width - 1)
        t.append("…")
    pad = width - t.cell_len
    if pad > 0:
        t = Text(" " * pad) + t if right else t + Text(" " * pad)
    return t


class PendingList(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"pendinglist--header", "pendinglist--cursor"}
    DEFAULT_CSS = """
    PendingList { height: 1fr; background: $surface; }
    PendingList > .pendinglist--header { text-style: bold; background: $panel; }
    PendingList:focus > .pendinglist--cursor { background: $accent 70%; }
    PendingList > .pendinglist--cursor { background: $accent 40%; }
    """
    cursor: reactive[int] = reactive(0)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[Job] = []
        self.cells: RowCells = lambda i, j: []
        self._width = sum(w + 1 for _, w, _ in HEADER)

    def set_rows(self, rows: list[Job], cells: RowCells) -> None:
        self.rows, self.cells = rows, cells
        self.virtual_size = Size(self._width, len(rows) + 1)
        self.cursor = min(self.cursor, max(0, len(rows) - 1))
        self.refresh()

    def row_text(self, index: int) -> str:
        """Row ``index`` as plain text (what the screen shows, for tests)."""
        return "".join(seg.text for seg in self._line(index, Style()))

    def _line(self, index: int, base: Style) -> list[Segment]:
        segs: list[Segment] = []
        for (_, width, right), cell in zip(HEADER, self.cells(index, self.rows[index]),
                                           strict=True):
            for seg in _fit(cell, width, right).render(self.app.console):
                segs.append(Segment(seg.text, base + seg.style if seg.style else base))
            segs.append(Segment(" ", base))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("pendinglist--header")
            segs = [Segment((t.rjust(w) if r else t.ljust(w)) + " ", style)
                    for t, w, r in HEADER]
            return Strip(segs).crop(scroll_x, scroll_x + width).extend_cell_length(width, style)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        base = self.rich_style
        if index == self.cursor:
            base = base + self.get_component_rich_style("pendinglist--cursor")
        return Strip(self._line(index, base)).crop(scroll_x, scroll_x + width) \
            .extend_cell_length(width, base)

    def watch_cursor(self, old: int, new: int) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False, immediate=True)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False, immediate=True)
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        if self.rows:
            self.cursor = min(max(0, self.cursor + delta), len(self.rows) - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        if self.rows:
            self.cursor = len(self.rows) - 1 if end else 0


def team_cell(team: str) -> Text:
    return Text(team, style=team_style(team))
