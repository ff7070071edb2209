"""Fitting a DataTable into the width it has, the way k9s and htop do: below a
width a screen drops its lowest-value columns in a fixed order (the screen shows
what it dropped in its detail line), and a long free-text column is clipped
with an ellipsis last. At 80 columns no table needs a sideways scroll."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.widgets import DataTable

from quotatop.tui.widgets.sortable_table import SortableTable, arrow, sort_value

CELL_PAD = 2  # DataTable's cell padding, both sides
SCROLLBAR = 2  # kept free for a vertical scrollbar, so a long table still fits
FLEX_MIN = 20  # a clipped free-text column keeps at least this many cells

Cell = str | Text
Columns = list[tuple[str, str]]  # (key, title)
Rows = Sequence[Sequence[Cell]]
Build = Callable[[frozenset[str]], tuple[Columns, Rows]]


def plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def cell_len(cell: Cell) -> int:
    return cell.cell_len if isinstance(cell, Text) else Text(cell).cell_len


def column_widths(cols: Columns, rows: Rows) -> list[int]:
    widths = [cell_len(title) for _, title in cols]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(cell))
    return widths


def layout_width(cols: Columns, rows: Rows) -> int:
    return sum(w + CELL_PAD for w in column_widths(cols, rows))


def clip(cell: Cell, width: int) -> Text:
    t = cell.copy() if isinstance(cell, Text) else Text(cell)
    if t.cell_len > width:
        t.truncate(max(1, width - 1))
        t.append("…")
    return t


def fit_layout(build: Build, steps: Sequence[str], width: int, flex: Sequence[str] = (),
               flex_min: int = FLEX_MIN) -> tuple[Columns, Rows, frozenset[str]]:
    """The widest layout that fits ``width`` cells. ``build`` applies the
    ``steps`` taken so far, in order, until the layout fits with its ``flex``
    columns (free text shown in full elsewhere) clipped to ``flex_min`` cells;
    then those are clipped, the widest first, to what the others leave."""
    taken: frozenset[str] = frozenset()
    cols, rows = build(taken)
    for step in steps:
        if _least_width(cols, rows, flex, flex_min) <= width:
            break
        taken |= {step}
        cols, rows = build(taken)
    return cols, _clip_flex(cols, rows, flex, width), taken


def _least_width(cols: Columns, rows: Rows, flex: Sequence[str], flex_min: int) -> int:
    return sum(min(w, max(cell_len(title), flex_min)) + CELL_PAD if key in flex
               else w + CELL_PAD
               for (key, title), w in zip(cols, column_widths(cols, rows), strict=True))


def _clip_flex(cols: Columns, rows: Rows, flex: Sequence[str], width: int) -> Rows:
    widths = column_widths(cols, rows)
    idx = [i for i, (key, _) in enumerate(cols) if key in flex]
    budget = width - sum(w + CELL_PAD for w in widths) + sum(widths[i] for i in idx)
    cap = None
    for n, w in enumerate(sorted(widths[i] for i in idx)):
        if w * (len(idx) - n) > budget:  # the rest share what is left evenly
            cap = budget // (len(idx) - n)
            break
        budget -= w
    if cap is None:
        return rows
    caps = {i: max(cap, cell_len(cols[i][1])) for i in idx}
    return [[clip(cell, caps[i]) if i in caps else cell for i, cell in enumerate(row)]
            for row in rows]


def fill_table(table: DataTable, cols: Columns, rows: Rows,
               keys: Sequence[str | None] | None = None) -> None:
    """Replace the rows (and the columns, when the layout changed), keeping the
    cursor on the same row number: a refresh must not jump it back to the top.
    A ``SortableTable`` gets its rows in its sort order and ▲/▼ on that column.
    The same columns, rows and keys as last time change nothing: a refresh whose
    table did not change does not rebuild it (nor redraw it)."""
    filled = (cols, rows, list(keys) if keys is not None else None, _sort_state(table))
    if getattr(table, "_quotatop_filled", None) == filled and table.row_count == len(rows):
        return
    at = table.cursor_row
    if isinstance(table, SortableTable) and table.sort_column is not None:
        cols, rows, keys = _sorted(table, cols, rows, keys)
    current = [(str(key.value), col.label.plain) for key, col in table.columns.items()]
    if current != cols:
        table.clear(columns=True)
        for key, title in cols:
            table.add_column(title, key=key)
    else:
        table.clear()
    for i, row in enumerate(rows):
        table.add_row(*row, key=keys[i] if keys is not None else None)
    if 0 < at < len(rows):
        table.move_cursor(row=at, animate=False)
    table._quotatop_filled = filled  # type: ignore[attr-defined]


def _sort_state(table: DataTable) -> tuple[object, bool] | None:
    if isinstance(table, SortableTable):
        return table.sort_column, table.sort_reverse
    return None


def _sorted(table: SortableTable, cols: Columns, rows: Rows,
            keys: Sequence[str | None] | None) -> tuple[Columns, Rows, list[str | None] | None]:
    """The rows (and their keys) in the table's sort order, the title marked; a
    column the current layout dropped leaves the order as built."""
    at = next((i for i, (key, _) in enumerate(cols) if key == table.sort_column), None)
    if at is None:
        return cols, rows, list(keys) if keys is not None else None
    order = sorted(range(len(rows)), key=lambda i: sort_value(plain(rows[i][at])),
                   reverse=table.sort_reverse)
    marked = [(key, f"{title}{arrow(table.sort_reverse)}" if i == at else title)
              for i, (key, title) in enumerate(cols)]
    return (marked, [rows[i] for i in order],
            [keys[i] for i in order] if keys is not None else None)
