"""quotatop's Textual application."""

from __future__ import annotations

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from collectors.base import Collector
from collectors.model import PENDING, RUNNING, Snapshot


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:g}"


class QuotatopApp(App[None]):
    """Per team: cap, used, queued, refreshed from a collector on a timer."""

    TITLE = "quotatop"
    CSS = """
    #status { height: 1; padding: 0 1; background: $boost; }
    DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("space", "toggle_pause", "Pause")]

    def __init__(self, collector: Collector, *, refresh: float = 1.0) -> None:
        super().__init__()
        self.collector = collector
        self.refresh_seconds = refresh
        self.paused = False
        self.snapshot: Snapshot | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("waiting for the first snapshot…", id="status")
        yield DataTable(id="teams", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#teams", DataTable)
        table.add_columns("team", "cap", "used", "queued", "running jobs", "pending jobs")
        self.sub_title = self.collector.name
        self.poll()
        self.set_interval(self.refresh_seconds, self.poll)

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    def poll(self) -> None:
        if not self.paused:
            self._collect()

    @work(thread=True, exclusive=True, group="collect")
    def _collect(self) -> None:
        # Collectors may block (a slow cluster); a thread keeps the UI responsive.
        snap = self.collector.collect()
        self.call_from_thread(self.show, snap)

    def show(self, snap: Snapshot) -> None:
        self.snapshot = snap
        table = self.query_one("#teams", DataTable)
        table.clear()
        unit = snap.meta.get("unit", "gpu")
        for team in snap.teams:
            jobs = [j for j in snap.jobs if j.team == team.name]
            running = sum(1 for j in jobs if j.state == RUNNING)
            pending = sum(1 for j in jobs if j.state == PENDING)
            cap = team.max.get(unit) if team.max else None
            table.add_row(team.name, _fmt(cap), _fmt(team.usage.get(unit, 0.0)),
                          _fmt(sum(j.request.get(unit, 0.0) for j in jobs
                                   if j.state == PENDING)),
                          str(running), str(pending), key=team.name)
        step, steps = snap.meta.get("step"), snap.meta.get("steps")
        where = f"step {step}/{steps}" if step else ""
        paused = "  [paused]" if self.paused else ""
        stale = f"  STALE: {snap.stale_reason}" if snap.stale else ""
        self.query_one("#status", Static).update(
            f"{snap.cluster} · {snap.source} · {where} · unit {unit}{paused}{stale}"
        )
