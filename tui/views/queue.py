"""Queue: every job in a windowed table; `/` filters, `s` sorts, Enter opens."""

from __future__ import annotations

from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from quotatop.tui.views.base import View, ViewData
from quotatop.tui.widgets.job_table import JobTable, TableContext


class QueueView(View):
    title = "Queue"

    BINDINGS = [Binding("escape", "close_filter", "Clear filter", show=False,
                        tooltip="clear the filter")]

    def compose(self) -> ComposeResult:
        yield Static(id="queue-status")
        yield JobTable(id="jobs")
        yield Input(placeholder="filter: user:NAME team:T state:pending reason:R or any text",
                    id="filter")

    def show_data(self, data: ViewData) -> None:
        table = self.query_one(JobTable)
        util = {u.job: u.mean_util_percent for u in data.snap.gpu_util}
        table.set_jobs(data.snap.jobs, TableContext(now=data.now, unit=data.derived.unit,
                                                    predictions=data.predictions,
                                                    gpu_util=util))
        self._status(data)

    def release(self) -> None:
        self.query_one(JobTable).release()

    def _status(self, data: ViewData | None = None) -> None:
        table = self.query_one(JobTable)
        preds = table.context.predictions
        parts = [f"{len(table.rows):,} of {len(table.jobs):,} jobs"]
        if table.filter:
            parts.append(f"filter “{table.filter.query}”")
        if not table.jobs:
            parts.append("no jobs: the source reports none running or pending")
        if table.sort_key:
            parts.append(f"sorted by {table.sort_key}{' ↓' if table.sort_reverse else ''}")
        else:  # every list says which order it is in
            parts.append("in the source's order (s sorts)")
        parts.append("start: core prediction" if preds.from_core else
                     "start: source estimate (core predicting…)" if preds.pending else
                     "start: source estimate")
        if preds.error:
            parts.append(preds.error)
        self.query_one("#queue-status", Static).update("  ·  ".join(parts))

    def open_filter(self) -> None:
        self.add_class("filtering")
        box = self.query_one("#filter", Input)
        box.value = self.query_one(JobTable).filter.query
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one(JobTable).set_filter(event.value)
        self._status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(JobTable).focus()

    def close_filter(self, clear: bool) -> None:
        if clear:
            self.query_one("#filter", Input).value = ""
            self.query_one(JobTable).set_filter("")
            self._status()
        self.remove_class("filtering")
        self.query_one(JobTable).focus()

    def action_close_filter(self) -> None:
        if not self.has_class("filtering") and not self.query_one(JobTable).filter:
            # Nothing to clear: esc goes on to the App's "back" (the previous screen).
            raise SkipAction()
        self.close_filter(clear=True)

    def on_job_table_sorted(self) -> None:
        self._status()
