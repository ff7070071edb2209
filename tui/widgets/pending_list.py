"""Priority's pending list, windowed: every pending job in scheduler order, only
the rows on screen formatted (Line API), so 100k pending cost what 30 do."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import BindingType
from textual.geometry import Size
from textual.strip import Strip

from quotatop.collectors.model import Job
from quotatop.tui.theme_colors import team_style
from quotatop.tui.widgets.cursor import CURSOR_BINDINGS, CursorList

# (title, width, right-aligned); the factor bar is the one flexible column: it
# takes what the others leave, from BAR_MIN up to its width here.
HEADER = (("rank", 6, True), ("job", 10, False), ("team", 8, False), ("qos", 7, False),
          ("priority", 9, True), ("factor breakdown", 28, False), ("wait", 5, True))
BAR_COLUMN = 5  # the factor bar's place in HEADER
BAR_MIN = 12

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


class PendingList(CursorList):
    BINDINGS: ClassVar[list[BindingType]] = CURSOR_BINDINGS
    COMPONENT_CLASSES: ClassVar[set[str]] = {"pendinglist--header", "pendinglist--cursor"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[Job] = []
        self.cells: RowCells = lambda i, j: []
        self.header = HEADER
        self._width = sum(w + 1 for _, w, _ in HEADER)

    @property
    def bar_width(self) -> int:
        """Cells for the factor bar at the current width (``cells`` draws it so)."""
        return self.header[BAR_COLUMN][1]

    def on_resize(self) -> None:
        # Room for a vertical scrollbar is kept, shown or not (as in the job table).
        width = self.size.width - self.styles.scrollbar_size_vertical
        fixed = sum(w + 1 for i, (_, w, _) in enumerate(HEADER) if i != BAR_COLUMN) + 1
        bar = min(HEADER[BAR_COLUMN][1], max(BAR_MIN, width - fixed))
        header = tuple((t, bar if i == BAR_COLUMN else w, r) for i, (t, w, r) in enumerate(HEADER))
        if header != self.header:
            self.header = header
            self._width = sum(w + 1 for _, w, _ in header)
            self.virtual_size = Size(self._width, len(self.rows) + 1)
            self.refresh()

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
        for (_, width, right), cell in zip(self.header, self.cells(index, self.rows[index]),
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
                    for t, w, r in self.header]
            return Strip(segs).crop(scroll_x, scroll_x + width).extend_cell_length(width, style)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        base = self.rich_style
        if index == self.cursor:
            base = base + self.get_component_rich_style("pendinglist--cursor")
        return Strip(self._line(index, base)).crop(scroll_x, scroll_x + width) \
            .extend_cell_length(width, base)

    def release(self) -> None:
        """Drop the rows (hidden, a newer snapshot arrived) until the next paint."""
        self.rows, self.cells = [], lambda i, j: []

    def row_count(self) -> int:
        return len(self.rows)


def team_cell(team: str) -> Text:
    return Text(team, style=team_style(team))
