"""The help screen and the job detail: modal, read-only, closed by esc."""

from __future__ import annotations

import re

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from quotatop.collectors.model import Job, Snapshot
from quotatop.tui.format import DASH, duration, num, start_window, until
from quotatop.tui.help import HelpRow
from quotatop.tui.predictions import Prediction, StartWindow, start_windows
from quotatop.tui.reasons import in_words


def help_table(rows: list[HelpRow]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2), expand=False)
    table.add_column(style="dim")
    table.add_column(style="bold")
    table.add_column()
    last = None
    for scope, key, what in rows:
        table.add_row(scope if scope != last else "", key, what)
        last = scope
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, rows: list[HelpRow]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("quotatop keys — read-only: no key changes a job", style="bold"))
            yield Static(help_table(self.rows), id="help-keys")


def detail_title(job: Job) -> str:
    """`job 1001  train-llm`, but the id once: a name that is the id, or holds it
    as a word (`prod-train-1001`, Kubernetes workloads), is the title alone."""
    name = job.name.strip()
    if not name or name.lower() == job.id.lower():
        return f"job {job.id}"
    if re.search(rf"(?<![\w]){re.escape(job.id)}(?![\w])", name):
        return f"job {name}"
    return f"job {job.id}  {name}"


def reason_and_binding(reason: str, binding: str) -> tuple[str, str]:
    """The scheduler's reason and the prediction's binding constraint, without
    saying one text twice: when one holds the other, only the longer is kept (on
    the line it came from)."""
    r, b = reason.strip(), (binding or "").strip()
    if r and b:
        if b.lower() in r.lower():
            return r, ""
        if r.lower() in b.lower():
            return "", b
    return r, b


# What the window row says while the sampled plans are being made.
WINDOW_PENDING = "sampling run times…"


def detail_text(job: Job, pred: Prediction, unit: str, now: float,
                window: StartWindow | str | None = None) -> Text:
    """``window``: the job's start window, or a word on why there is none yet."""
    t = Text()

    def row(label: str, value: str, style: str = "") -> None:
        t.append(f"{label:<16}", style="dim")
        t.append(f"{value}\n", style=style)

    t.append(f"{detail_title(job)}\n\n", style="bold")
    row("state", job.state, "yellow" if job.state == "pending" else "green")
    row("user / team", f"{job.user or DASH} / {job.team or DASH}")
    row("qos", job.qos + (f" ({job.qos_class})" if job.qos_class else ""))
    row("partition", job.partition or DASH)
    row("request", ", ".join(f"{k}={num(v)}" for k, v in sorted(job.request.items())) or DASH)
    row("nodes", f"{job.nodes_requested} requested" + (f": {', '.join(job.nodes)}"
                                                      if job.nodes else ""))
    row("time limit", duration(job.time_limit))
    if job.runtime_estimate is not None:
        # The estimate from history beside the limit-based bound; which one the
        # prediction ran with is said on the "run time" row below.
        row("run estimate", duration(job.runtime_estimate)
            + (f"  ({job.runtime_basis})" if job.runtime_basis else ""))
    row("submitted", duration(now - job.submit_time) + " ago" if job.submit_time else DASH)
    if job.start_time:
        row("started", duration(now - job.start_time) + " ago")
    if job.state == "pending":
        reason, binding = reason_and_binding(in_words(job.reason), pred.binding)
        if reason or not binding:
            row("reason", reason or DASH)
        row("predicted start", until(pred.start, now) + f"  ({pred.origin})")
        if isinstance(window, StartWindow):
            # Which of two running jobs ends first nobody knows: the spread of the
            # start over plans with run times drawn from history says how sure it is.
            row("start window", start_window(window.p10, window.p50, window.p90, now))
        elif window:
            row("start window", window, "dim")
        row("predicted nodes", ", ".join(pred.nodes) or DASH)
        if binding:
            row("binding", binding)
        if pred.runtime_basis:
            row("run time", f"{duration(pred.runtime)} used: {pred.runtime_basis}")
        if pred.preempts:
            row("would preempt", ", ".join(pred.preempts), "red")
    if job.dependency:
        row("dependency", job.dependency)
    if job.gang:
        row("gang", job.gang)
    row("priority", num(job.priority))
    f = job.factors
    if f is not None:
        t.append("\npriority factors\n", style="bold")
        for k in ("age", "fairshare", "qos", "job_size", "partition", "assoc", "nice", "tres"):
            v = getattr(f, k)
            if v:
                row(f"  {k}", num(v))
    return t


class JobDetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close")]

    def __init__(self, job: Job, pred: Prediction, unit: str, now: float,
                 snap: Snapshot | None = None) -> None:
        super().__init__()
        self.job, self.pred, self.unit, self.now = job, pred, unit, now
        # The snapshot the window is sampled from: only for a pending job the core
        # predicted (a source's own estimate has nothing to sample).
        self._snap = snap if job.state == "pending" and pred.origin == "core" else None
        self.window: StartWindow | str | None = WINDOW_PENDING if self._snap else None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._text(), id="detail")

    def _text(self) -> Text:
        return detail_text(self.job, self.pred, self.unit, self.now, self.window)

    def on_mount(self) -> None:
        if self._snap is not None:
            self._sample(self._snap)

    @work(thread=True, exclusive=True)
    def _sample(self, snap: Snapshot) -> None:
        # The core releases the GIL: the screen stays responsive while it plans.
        window = start_windows(snap).get(self.job.id) or "none: the core made no window"
        self.app.call_from_thread(self._show, window)

    def _show(self, window: StartWindow | str) -> None:
        self.window = window
        if self.is_mounted:
            self.query_one("#detail", Static).update(self._text())
