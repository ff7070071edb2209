"""The keys every windowed list answers, and the row cursor two of them share.

``CURSOR_BINDINGS`` calls ``cursor(n)``, ``page(n)`` and ``edge(0|1)``: a list
with a row cursor moves it (``CursorList``), the node grid scrolls its lines.
The help screen lists these keys once for all of them (``CursorList.HELP_BINDINGS``).
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.scroll_view import ScrollView

_MOVE = Binding.Group("move the cursor")
_PAGE = Binding.Group("page")
_EDGE = Binding.Group("first / last row")
CURSOR_BINDINGS: list[BindingType] = [
    Binding("up,k", "cursor(-1)", "Up", show=False, group=_MOVE),
    Binding("down,j", "cursor(1)", "Down", show=False, group=_MOVE),
    Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, group=_PAGE),
    Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, group=_PAGE),
    Binding("home,g", "edge(0)", "First", show=False, group=_EDGE),
    Binding("end,G", "edge(1)", "Last", show=False, group=_EDGE),
]


class CursorList(ScrollView, can_focus=True):
    """A windowed list under a one-line header, with a row cursor kept on screen.
    Subclasses bind ``CURSOR_BINDINGS`` (plus their own keys) in ``BINDINGS``."""

    # Not BINDINGS: each subclass binds them itself (the node grid, no CursorList, too);
    # the help lists them once, under "tables".
    HELP_BINDINGS: ClassVar[list[BindingType]] = CURSOR_BINDINGS

    cursor: reactive[int] = reactive(0)

    def row_count(self) -> int:
        raise NotImplementedError

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)  # minus the header
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        n = self.row_count()
        if n:
            self.cursor = min(max(0, self.cursor + delta), n - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        n = self.row_count()
        if n:
            self.cursor = n - 1 if end else 0
