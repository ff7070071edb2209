"""The Nodes grid, windowed: any number of nodes, only the lines on screen are
formatted (Textual's Line API), like the job table. ``set_nodes`` keeps one
small tuple per node; ``render_line`` builds the cells of the visible lines."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from quotatop.tui.theme_colors import team_color
from quotatop.tui.widgets.cursor import CURSOR_BINDINGS

FREE, STRANDED, UNKNOWN = "·", "✕", "?"
GAP = 3

# (name, state, down-state?, stranding?, capacity, allocated, [(team letter, team, units)])
NodeCell = tuple[str, str, bool, bool, int, int, list[tuple[str, str, int]]]


class NodeGrid(ScrollView, can_focus=True):
    # No row cursor: the same keys scroll the grid's lines.
    BINDINGS: ClassVar[list[BindingType]] = CURSOR_BINDINGS

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cells: list[NodeCell] = []
        self.per_line = 1
        self.name_w = 4
        self.cap_w = 1

    def set_nodes(self, cells: list[NodeCell], width: int) -> None:
        self.cells = cells
        self.name_w = max([len(c[0]) for c in cells] + [4])
        self.cap_w = max([c[4] for c in cells] + [1])
        cell_w = self.name_w + 1 + 5 + 1 + self.cap_w
        self.per_line = max(1, (width + GAP) // (cell_w + GAP))
        lines = -(-len(cells) // self.per_line)
        self.virtual_size = Size(self.per_line * (cell_w + GAP), lines)
        self.refresh()

    def text_line(self, y: int) -> list[tuple[str, Style | None]]:
        """Line ``y`` of the grid as (text, style) runs (also what tests read)."""
        out: list[tuple[str, Style | None]] = []
        start = y * self.per_line
        for i, (name, state, down_state, stranding, cap, alloc, usage) in enumerate(
                self.cells[start:start + self.per_line]):
            if i:
                out.append((" " * GAP, None))
            out.append((f"{name:<{self.name_w}} ", Style(bold=True)))
            out.append((f"{state[:5]:<5} ", Style(color="red") if down_state
                        else Style(dim=True)))
            used = 0
            for letter, team, amount in usage:
                k = min(amount, cap - used)
                if k > 0:
                    out.append((letter * k, Style(bold=True, color="#000000",
                                                  bgcolor=team_color(team))))
                    used += k
            if alloc > used:  # allocated but no job we know of holds it
                out.append((UNKNOWN * (alloc - used), Style(reverse=True)))
                used = alloc
            rest = max(0, cap - used)
            out.append(((STRANDED if stranding else FREE) * rest,
                        Style(color="red") if stranding else Style(color="green")))
            out.append((" " * (self.cap_w - cap), None))
        return out

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        segs = [Segment(text, base + style if style else base)
                for text, style in self.text_line(scroll_y + y)]
        return Strip(segs).crop(scroll_x, scroll_x + width).extend_cell_length(width, base)

    def action_cursor(self, n: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + n, animate=False)

    def action_page(self, n: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + n * max(1, self.size.height - 1), animate=False)

    def action_edge(self, end: int) -> None:
        if end:
            self.scroll_end(animate=False)
        else:
            self.scroll_home(animate=False)
