"""quotatop's Textual application: seven screens over one collector.

The collector runs in a thread worker at the configured cadence; the worker also
derives what the screens show (team rows, meter, predictions), so the UI thread
only paints. A failed or stale source shows a banner while the last good data
stays on screen. Read-only: no key changes a job.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from collectors.base import Collector
from collectors.model import Snapshot
from collectors.scenario_source import ScenarioSource
from tui.derive import Derived, derive
from tui.format import duration
from tui.modals import HelpScreen, JobDetailScreen
from tui.palette import QuotatopCommands
from tui.predictions import Predictions, core_available, predict
from tui.scenario_timeline import ScenarioTimeline
from tui.theme_colors import assign_team_colors
from tui.timeline_protocol import TimelineControl, timeline_of
from tui.views.base import View, ViewData
from tui.views.elastic import ElasticView
from tui.views.nodes import NodesView
from tui.views.overview import OverviewView
from tui.views.priority import PriorityView
from tui.views.queue import QueueView
from tui.views.quota import QuotaView
from tui.views.timeline import TimelineView
from tui.views_registry import VIEW_IDS, VIEW_TITLES
from tui.widgets.job_table import JobTable

HISTORY = 60  # refreshes of per-team usage kept for the sparklines


class QuotatopApp(App[None]):
    TITLE = "quotatop"
    COMMANDS = App.COMMANDS | {QuotatopCommands}
    CSS = """
    #header { height: 1; padding: 0 1; background: $primary-background; color: $text; }
    #banner { height: auto; padding: 0 1; background: $error; color: $text;
              text-style: bold; display: none; }
    #banner.shown { display: block; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    DataTable { scrollbar-size-horizontal: 0; }
    """
    BINDINGS = [
        *(Binding(str(i), f"show_view('{vid}')", title, show=False)
          for i, (vid, title) in enumerate(zip(VIEW_IDS, VIEW_TITLES, strict=True), 1)),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter"),
        Binding("colon", "command_palette", "Palette", show=False),
        Binding("space", "toggle_pause", "Pause"),
        Binding("r", "refresh_now", "Refresh", show=False),
        Binding("t", "next_theme", "Theme", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, collector: Collector, *, refresh: float = 1.0,
                 clock: Callable[[], float] = time.time, theme: str | None = None) -> None:
        super().__init__()
        if isinstance(collector, ScenarioSource):
            collector = ScenarioTimeline(collector)  # type: ignore[assignment]
        self.collector = collector
        self.timeline: TimelineControl | None = timeline_of(collector)
        self.refresh_seconds = refresh
        self.clock = clock
        self.paused = False
        self.snapshot: Snapshot | None = None
        self.data: ViewData | None = None
        self.failure: str | None = None
        self.last_ok: float | None = None
        self.history: dict[str, deque[float]] = {}
        self._collecting = False
        self._again = False
        self._predicting = False
        self._want_prediction: Snapshot | None = None
        self._dirty: set[str] = set()
        if theme:
            self.theme = theme

    # layout ----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("quotatop · waiting for the first snapshot…", id="header")
        yield Static(id="banner")
        views: list[View] = [OverviewView(), QuotaView(), PriorityView(), ElasticView(),
                             QueueView(), NodesView(), TimelineView(self.timeline)]
        with TabbedContent(initial="overview"):
            for i, (vid, title, view) in enumerate(
                    zip(VIEW_IDS, VIEW_TITLES, views, strict=True), 1):
                view.id = f"view-{vid}"
                with TabPane(f"{i} {title}", id=vid):
                    yield view
        yield Footer()

    def on_mount(self) -> None:
        # Queries go to the main screen even while help or a job detail is on top.
        self.main = self.screen
        self.sub_title = self.collector.name
        self.poll()
        self.set_interval(self.refresh_seconds, self.poll)
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        with contextlib.suppress(NoMatches):
            self._paint_header()

    # collection ------------------------------------------------------------
    def poll(self) -> None:
        paused = self.timeline.paused if self.timeline else self.paused
        if not paused:
            self.refresh_now()

    def refresh_now(self) -> None:
        if self._collecting:
            self._again = True  # one collect at a time; run once more when it returns
            return
        self._collecting = True
        self._again = False
        self._collect()

    def _collect_done(self) -> None:
        self._collecting = False
        if self._again:
            self.refresh_now()

    @work(thread=True, group="collect")
    def _collect(self) -> None:
        # A slow cluster blocks this thread, never the UI.
        try:
            snap = self.collector.collect()
            derived = derive(snap)
        except Exception as e:  # a collector bug must become a banner, not a crash
            self.call_from_thread(self._fail_unless_closing, f"{type(e).__name__}: {e}")
            return
        # Paint with the source's estimates now; the core's predictions follow
        # when ready, so a slow prediction never delays fresh data.
        keep = self.data.predictions if self.data is not None else Predictions()
        self.call_from_thread(self._apply_unless_closing, snap, derived,
                              Predictions(error=keep.error) if not core_available() else
                              Predictions(pending=True))
        self._want_prediction = snap
        self.call_from_thread(self._start_prediction)

    def _start_prediction(self) -> None:
        if core_available() and not self._predicting and self._want_prediction is not None:
            self._predicting = True
            snap, self._want_prediction = self._want_prediction, None
            self._predict(snap)

    @work(thread=True, group="predict")
    def _predict(self, snap: Snapshot) -> None:
        preds = predict(snap)
        self.call_from_thread(self._predicted, snap, preds)

    def _predicted(self, snap: Snapshot, preds: Predictions) -> None:
        self._predicting = False
        if self.data is not None and self.data.snap is snap:
            self.data.predictions = preds
            self._dirty = set(VIEW_IDS)
            with contextlib.suppress(NoMatches):
                self._paint_active()
        self._start_prediction()  # a newer snapshot arrived meanwhile

    def _apply_unless_closing(self, snap: Snapshot, derived: Derived, preds: Predictions) -> None:
        # A collect that finishes while the app shuts down finds its widgets gone.
        # The ids queried are fixed by compose, so NoMatches only means teardown.
        with contextlib.suppress(NoMatches):
            self.apply(snap, derived, preds)

    def _fail_unless_closing(self, reason: str) -> None:
        with contextlib.suppress(NoMatches):
            self._failed(reason)

    def _failed(self, reason: str) -> None:
        self._collect_done()
        self.failure = reason
        self._paint_header()

    def apply(self, snap: Snapshot, derived: Derived, preds: Predictions) -> None:
        """Show a new snapshot (UI thread). Cheap: only the visible view paints."""
        self._collect_done()
        self.snapshot = snap
        self.failure = None
        if not snap.stale:
            self.last_ok = self.clock()
        assign_team_colors([t.name for t in snap.teams])
        for r in derived.teams:
            self.history.setdefault(r.name, deque(maxlen=HISTORY)).append(r.used)
        hist: dict[str, list[float]] = {}
        for s in snap.utilization:
            team = s.labels.get("team")
            if team and s.points:
                hist[team] = [v for _, v in s.points]
        for name, d in self.history.items():
            hist.setdefault(name, list(d))
        self.data = ViewData(snap=snap, derived=derived, predictions=preds, now=self.clock(),
                             history=hist)
        self._dirty = set(VIEW_IDS)
        self._paint_active()
        self._paint_header()

    # painting --------------------------------------------------------------
    @property
    def active_view(self) -> str:
        return self.main.query_one(TabbedContent).active or "overview"

    def view(self, vid: str) -> View:
        return self.main.query_one(f"#view-{vid}", View)

    def _paint_active(self) -> None:
        vid = self.active_view
        if self.data is None or vid not in self._dirty:
            return
        try:
            view = self.view(vid)
        except NoMatches:  # the tab's content is still mounting; try again shortly
            self.set_timer(0.05, self._paint_active)
            return
        self._dirty.discard(vid)
        view.show_data(self.data)

    def _paint_header(self) -> None:
        snap = self.snapshot
        now = self.clock()
        t = Text()
        t.append("quotatop", style="bold")
        tl = self.timeline
        if tl.paused if tl else self.paused:
            t.append(" │ ")
            t.append("PAUSED", style="bold yellow")
        if tl is not None:
            t.append(f" │ replay {tl.position + 1}/{tl.frames} ×{tl.speed:g}")
        if snap is not None:
            t.append(f" │ {snap.cluster or 'cluster'} │ {snap.source or self.collector.name}")
            age = duration(now - self.last_ok) if self.last_ok is not None else "—"
            t.append(f" │ refreshed {age} ago")
            t.append(f" │ every {self.refresh_seconds:g}s", style="dim")
        self.main.query_one("#header", Static).update(t)
        banner = self.main.query_one("#banner", Static)
        reason = None
        if self.failure:
            reason = f"source failed: {self.failure}"
        elif snap is not None and snap.stale:
            reason = f"source stale: {snap.stale_reason or 'no reason given'}"
        elif snap is not None:
            bad = [s for s in snap.status if not s.ok]
            if bad:
                reason = "; ".join(f"{s.name}: {s.error or 'failed'}" for s in bad[:3])
        if reason:
            kept = (f" — showing the last good data ({duration(now - self.last_ok)} old)"
                    if self.last_ok is not None else " — no data yet")
            banner.update(f"⚠ {reason}{kept}")
            banner.add_class("shown")
        else:
            banner.remove_class("shown")

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._paint_active()
        self._focus_view(self.active_view)

    def _focus_view(self, vid: str) -> None:
        view = self.view(vid)
        focused = self.focused
        if focused is not None and (focused is view or view in focused.ancestors):
            return  # already inside (e.g. the filter box): keep it
        target = next(iter(view.query(JobTable)), None) or next(iter(view.query(DataTable)),
                                                                None)
        if target is not None:
            target.focus()
        elif vid == "timeline":
            view.focus()

    # actions ---------------------------------------------------------------
    def show_view(self, vid: str) -> None:
        self.main.query_one(TabbedContent).active = vid
        self._paint_active()
        self._focus_view(vid)

    def action_show_view(self, vid: str) -> None:
        self.show_view(vid)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_filter(self) -> None:
        self.show_view("queue")
        self.main.query_one(QueueView).open_filter()

    def action_toggle_pause(self) -> None:
        if self.timeline is not None:
            if self.timeline.paused:
                self.timeline.play()
            else:
                self.timeline.pause()
        else:
            self.paused = not self.paused
        self._paint_header()
        if self.active_view == "timeline":
            self.main.query_one(TimelineView).paint()

    def action_refresh_now(self) -> None:
        self.refresh_now()

    def action_next_theme(self) -> None:
        names = sorted(self.available_themes)
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names \
            else names[0]
        self.notify(f"theme: {self.theme}", timeout=2)

    def on_job_table_opened(self, event: JobTable.Opened) -> None:
        if self.data is None:
            return
        self.push_screen(JobDetailScreen(event.job, self.data.predictions.get(event.job),
                                         self.data.derived.unit, self.clock()))
