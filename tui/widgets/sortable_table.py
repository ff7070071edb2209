"""Sorting a table by one column, the k9s way: shift+letter sorts by the column
whose title starts with that letter (again: reversed), a click on a header does
the same, and the sorted column's title carries ▲ (ascending) or ▼.

``SortableTable`` is a DataTable whose views fill it through ``fill_table``
(tui/table_fit.py), which puts the rows in the chosen order on every refresh;
``JobTable`` keeps its own sort and uses ``letter_column`` for the letter keys.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from typing import Any, ClassVar

from textual import events
from textual.widgets import DataTable

UP, DOWN = "▲", "▼"
DASH = "—"

# A leading quantity as the views print it: 24, 0.5, 1.2k, 60%, 12m, 3h ago, 3/2.
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([kKsmhd%]?)")
_SCALE = {"k": 1000.0, "K": 1000.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0,
          "%": 1.0, "": 1.0}


def sort_value(text: str) -> tuple[int, float, str]:
    """Numbers (with their unit) before words, blanks and dashes last, so "10" sorts
    after "9" and "2h" after "45m"."""
    text = text.strip()
    if not text or text == DASH:
        return (2, 0.0, "")
    m = _NUMBER.match(text)
    if m:
        return (0, float(m.group(1)) * _SCALE[m.group(2)], text.lower())
    return (1, 0.0, text.lower())


def arrow(reverse: bool) -> str:
    return DOWN if reverse else UP


def letter_column(event: events.Key, titles: Sequence[str], bound: Container[str]
                  ) -> int | None:
    """The column a shift+letter key sorts by, or None (not a capital letter, a
    letter the app binds to something else — G end, R record, S reverse, E export —
    or no title starting with it). ``bound`` is the screen's active bindings."""
    ch = event.character or ""
    if len(ch) != 1 or not "A" <= ch <= "Z" or event.key in bound:
        return None
    return next((i for i, t in enumerate(titles) if t.strip().upper().startswith(ch)), None)


class SortableTable(DataTable[Any]):
    """A DataTable sorted by ``sort_column`` (a column key) when ``fill_table`` fills it."""

    # on_key, not a Binding (the Queue's JobTable answers the same): for the help screen
    HELP_EXTRA: ClassVar[tuple[tuple[str, str], ...]] = (
        ("shift+letter", "sort by that column; again reverses"),)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort_column: str | None = None
        self.sort_reverse = False

    def sort_toggle(self, key: str) -> None:
        """Sort by ``key``; the same column again reverses the order."""
        if self.sort_column == key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = key, False
        # The view repaints, and fill_table orders the rows and marks the header.
        view = next((a for a in self.ancestors if hasattr(a, "repaint")), None)
        if view is not None:
            view.repaint()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self.sort_toggle(event.column_key.value)

    def on_key(self, event: events.Key) -> None:
        keys = [str(k.value) for k in self.columns]
        titles = [c.label.plain for c in self.columns.values()]
        at = letter_column(event, titles, self.screen.active_bindings)
        if at is not None:
            event.stop()
            event.prevent_default()
            self.sort_toggle(keys[at])
