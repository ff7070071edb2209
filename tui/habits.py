"""Keys k9s and htop users press without thinking (issue #18): esc goes back,
←/→ switch screens, `e`/`E` export the table on screen, ctrl+s saves a screenshot.

A mixin for ``QuotatopApp`` so that app.py only lists ``HABIT_BINDINGS``; it reads
the app's ``main``, ``active_view`` and ``show_view``. Nothing here runs a
subprocess: an export or a screenshot is a file written from this process.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Input, TabbedContent, TextArea

from quotatop.tui.views_registry import VIEW_IDS
from quotatop.tui.widgets.job_table import COLUMNS as JOB_COLUMNS
from quotatop.tui.widgets.job_table import JobTable, TableContext

if TYPE_CHECKING:  # the mixin is only ever mixed into the App
    from textual.app import App
    from textual.screen import Screen

    _Base = App[None]
else:
    _Base = object

HISTORY_MAX = 20  # screens esc can go back through

_SWITCH = Binding.Group("previous / next screen")
HABIT_BINDINGS: list[BindingType] = [
    # Priority, so that a focused table (DataTable, the tab bar) does not take them
    # first; ``_text_entry`` hands them back to the filter box's cursor.
    Binding("left", "switch_view(-1)", "Previous screen", show=False, priority=True,
            group=_SWITCH),
    Binding("right", "switch_view(1)", "Next screen", show=False, priority=True,
            group=_SWITCH),
    # Not priority: a modal's own esc and the Queue's "clear the filter" come first.
    Binding("escape", "back", "Back", show=False, tooltip="back: dialog, filter, last screen"),
    Binding("e", "export('csv')", "Export CSV", show=False, tooltip="export the table as CSV"),
    Binding("E", "export('json')", "Export JSON", show=False,
            tooltip="export the table as JSON"),
    Binding("ctrl+s", "save_screen", "Screenshot", show=False, tooltip="screenshot (SVG)"),
]

Dump = tuple[list[str], Callable[[], list[list[str]]]]


class HabitsMixin(_Base):
    """Back, screen switching, export and screenshot for the App."""

    export_dir: Path | None = None  # [tui] export_dir; None: the current directory

    if TYPE_CHECKING:
        main: Screen[None]
        clock: Callable[[], float]

        @property
        def active_view(self) -> str: ...

        def show_view(self, vid: str) -> None: ...

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._shown_view = "overview"
        self._view_history: list[str] = []  # screens shown before, the last on top

    # esc: back -------------------------------------------------------------
    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # Called beside the App's own handler (Textual dispatches along the MRO).
        new = event.pane.id or "overview"
        if new != self._shown_view:
            self._view_history.append(self._shown_view)
            del self._view_history[:-HISTORY_MAX]
            self._shown_view = new

    def action_back(self) -> None:
        """esc where nothing closer took it (a dialog, the Queue's filter): the
        screen shown before this one, k9s-style; with none left, the Overview."""
        if self.screen is not self.main:
            raise SkipAction()
        history = self._view_history
        current = self.active_view
        while history and history[-1] == current:
            history.pop()
        target = history.pop() if history else "overview"
        if target == current:
            raise SkipAction()
        self._shown_view = target  # going back is not a visit to remember
        self.show_view(target)

    # ←/→: screens ----------------------------------------------------------
    def _text_entry(self) -> bool:
        return isinstance(self.focused, Input | TextArea)

    def action_switch_view(self, delta: int) -> None:
        # Under a dialog or the palette, or typing a filter, the arrow is theirs.
        if self.screen is not self.main or self._text_entry():
            raise SkipAction()
        at = VIEW_IDS.index(self.active_view)
        self.show_view(VIEW_IDS[(at + delta) % len(VIEW_IDS)])

    # e / E: export ---------------------------------------------------------
    def current_table(self) -> JobTable | DataTable | None:
        """The focused table if any, else the first table on the visible screen."""
        focused = self.focused
        if isinstance(focused, JobTable | DataTable) and self.screen is self.main:
            return focused
        view = self.main.query_one(f"#view-{self.active_view}")
        return next(iter(view.query("JobTable, DataTable")), None)  # type: ignore[arg-type]

    def action_export(self, fmt: str) -> None:
        if self.screen is not self.main:
            raise SkipAction()
        table = self.current_table()
        if table is None:
            self.notify("no table on this screen to export", severity="warning", timeout=3)
            return
        directory = self.export_dir or Path.cwd()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
        path = _free_name(directory / f"quotatop-{self.active_view}-{stamp}.{fmt}")
        self._write_export(path, fmt, *table_dump(table))

    # A thread: 100k queued jobs take a second to format; the UI keeps painting.
    @work(thread=True, group="export", description="export")
    def _write_export(self, path: Path, fmt: str, header: list[str],
                      rows: Callable[[], list[list[str]]]) -> None:
        try:
            write_table(path, fmt, header, rows())
        except OSError as e:
            self.call_from_thread(self.notify, f"export failed: {e}", severity="error",
                                  timeout=6)
            return
        self.call_from_thread(self.notify, f"exported to {path}", timeout=4)

    # ctrl+s: screenshot ----------------------------------------------------
    def action_save_screen(self) -> None:
        """An SVG of what is on screen (Textual's own, dialogs included). Named apart
        from Textual's action_screenshot, which the palette's command uses."""
        directory = self.export_dir or Path.cwd()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
        path = _free_name(directory / f"quotatop-{self.active_view}-{stamp}.svg")
        try:
            self.save_screenshot(filename=path.name, path=str(path.parent))
        except OSError as e:
            self.notify(f"screenshot failed: {e}", severity="error", timeout=6)
            return
        self.notify(f"screenshot saved to {path}", timeout=4)


def _free_name(path: Path) -> Path:
    """``path``, or with -1, -2 … when two exports fall in the same second."""
    n = 1
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def table_dump(table: JobTable | DataTable) -> Dump:
    """The header and a function making the rows, in the order shown (filter and
    sort applied). Read on the UI thread; the rows are formatted in the worker.

    The Queue exports every column in full, including those a narrow terminal
    drops; a DataTable exports the cells as painted (its sort arrow stripped)."""
    if isinstance(table, JobTable):
        jobs = list(table.rows)
        ctx = TableContext(now=table.context.now, unit=table.context.unit,
                           predictions=table.context.predictions,
                           gpu_util=table.context.gpu_util)
        header = [ctx.unit.upper() if c.key == "amount" else c.title for c in JOB_COLUMNS]
        return header, lambda: [[c.text(j, ctx) for c in JOB_COLUMNS] for j in jobs]
    header = [strip_arrow(col.label.plain) for col in table.columns.values()]
    cells = [[_plain(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return header, lambda: cells


def strip_arrow(title: str) -> str:
    return title.rstrip("▲▼").rstrip()


def _plain(cell: object) -> str:
    return str(getattr(cell, "plain", cell))


def write_table(path: Path, fmt: str, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        # One object per row keyed by the column titles: what `jq` users expect.
        keys = [h or f"col{i}" for i, h in enumerate(header)]
        records = [dict(zip(keys, row, strict=False)) for row in rows]
        path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
