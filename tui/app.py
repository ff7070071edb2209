"""quotatop's Textual application over one collector: eight views (keys 1–8), the
Report screen (m), and the help, job-detail and what-if dialogs over them.

The refresh pipeline (collect → derive → predict → incidents → record) lives in a
session with no Textual in it (tui/session.py), run in thread workers at the
configured cadence; its events come back as typed messages whose handlers only
paint. A failed or stale source shows a banner while the last good data
stays on screen. Read-only: no key changes a job.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from quotatop.collectors.base import Collector
from quotatop.collectors.footprint import Footprint
from quotatop.collectors.model import Snapshot
from quotatop.review.report import Prices
from quotatop.tui.chart_data import ChartHistory, sample_of
from quotatop.tui.derive import Derived
from quotatop.tui.format import duration
from quotatop.tui.habits import HABIT_BINDINGS, HabitsMixin
from quotatop.tui.help import help_rows
from quotatop.tui.live_incidents import IncidentState, LiveIncidents
from quotatop.tui.live_recording import LiveRecording
from quotatop.tui.modals import HelpScreen, JobDetailScreen
from quotatop.tui.paint import update_static
from quotatop.tui.palette import QuotatopCommands
from quotatop.tui.predictions import Predictions
from quotatop.tui.report_screen import ReportScreen
from quotatop.tui.session import Session, SessionEvent
from quotatop.tui.session_messages import (
    IncidentsChanged,
    PredictionRequested,
    PredictionsReady,
    RecordingStateChanged,
    RefreshFinished,
    SessionRepeated,
    SessionUpdated,
    SourceFailed,
    as_message,
)
from quotatop.tui.theme_colors import assign_team_colors
from quotatop.tui.timeline_protocol import TimelineControl
from quotatop.tui.views.base import View, ViewData
from quotatop.tui.views.elastic import ElasticView
from quotatop.tui.views.incidents import IncidentsView
from quotatop.tui.views.nodes import NodesView
from quotatop.tui.views.overview import OverviewView
from quotatop.tui.views.priority import PriorityView
from quotatop.tui.views.queue import QueueView
from quotatop.tui.views.quota import QuotaView
from quotatop.tui.views.timeline import TimelineView
from quotatop.tui.views_registry import VIEW_IDS, VIEW_TITLES
from quotatop.tui.whatif_dialog import WhatifScreen, selected_row
from quotatop.tui.widgets.cursor import CursorList
from quotatop.tui.widgets.footer import LeanFooter
from quotatop.tui.widgets.job_table import JobTable
from quotatop.tui.widgets.node_grid import NodeGrid
from quotatop.tui.widgets.pending_list import PendingList
from quotatop.tui.widgets.sortable_table import SortableTable

HISTORY = 60  # refreshes of per-team usage kept for the sparklines
UNCHANGED_REPAINT = 30.0  # seconds between paints of a view whose data did not change
TABS_FULL = 90  # columns the tab bar needs with Textual's own padding
STYLES = Path(__file__).parent / "styles"
# Help rows (tui/help.py) of keys declared in a loop or as a group.
SCREEN_HELP = {"incidents": "Incidents: open and closed, teams, jobs, suggested remedy"}
SCREEN_KEYS = Binding.Group(", ".join(t for v, t in zip(VIEW_IDS, VIEW_TITLES, strict=True)
                                      if v not in SCREEN_HELP))
REPLAY_STEP = Binding.Group("replay: step one frame back / forward")
REPLAY_SEEK = Binding.Group("replay: seek 5% back / forward")
REPLAY_SPEED = Binding.Group("replay: slower / faster: ×1 ×2 ×5 ×10 ×50 ×100 ×1000")


class QuotatopApp(HabitsMixin, App[None]):
    TITLE = "quotatop"
    COMMANDS = App.COMMANDS | {QuotatopCommands}
    # Every style of the TUI, in files; the App's own last, so that it wins ties as
    # App CSS wins over widgets' DEFAULT_CSS.
    CSS_PATH = [STYLES / "widgets.tcss", STYLES / "views.tcss", STYLES / "dialogs.tcss",
                STYLES / "app.tcss"]
    HELP_EXTRA = (("mouse", "click tabs, rows, column headers, the timeline bar"),)
    # The help screen is made from these (tui/help.py): a tooltip is a key's help line.
    BINDINGS = [
        *(Binding(str(i), f"show_view('{vid}')", title, show=False,
                  group=None if vid in SCREEN_HELP else SCREEN_KEYS,
                  tooltip=SCREEN_HELP.get(vid, ""))
          for i, (vid, title) in enumerate(zip(VIEW_IDS, VIEW_TITLES, strict=True), 1)),
        Binding("question_mark", "help", "Help", tooltip="this help"),
        Binding("slash", "filter", "Filter", tooltip="filter the queue (opens the Queue)"),
        # Both keys: declaring any binding for the palette stops Textual from adding
        # its own ctrl+p, so it is named here too.
        Binding("colon,ctrl+p", "command_palette", "Palette", show=False, priority=True,
                tooltip="command palette (screens, themes, help)"),
        Binding("space", "toggle_pause", "Pause",
                tooltip="pause / resume refresh (replay: play / pause)"),
        Binding("r", "refresh_now", "Refresh", show=False, tooltip="refresh now"),
        Binding("R", "toggle_record", "Record",
                tooltip="start / stop recording this session (● REC in the header)"),
        Binding("t", "next_theme", "Theme", show=False, tooltip="next theme"),
        Binding("w", "whatif", "What-if", show=False,
                tooltip="what-if on quotas, QoS, weights, nodes"),
        Binding("m", "report", "Report", show=False,
                tooltip="period report: usage against guarantee, cost, waits, charts"),
        Binding("q", "quit", "Quit", tooltip="quit"),
        # Replay keys work on every screen (the Timeline adds home/end and + -, which
        # other screens use for their own rows and folds).
        Binding("comma", "replay('step', -1)", "Step back", show=False, group=REPLAY_STEP),
        Binding("full_stop", "replay('step', 1)", "Step", show=False, group=REPLAY_STEP),
        Binding("less_than_sign", "replay('seek_frac', -0.05)", "Seek back", show=False,
                group=REPLAY_SEEK),
        Binding("greater_than_sign", "replay('seek_frac', 0.05)", "Seek fwd", show=False,
                group=REPLAY_SEEK),
        Binding("left_square_bracket", "replay('speed', -1)", "Slower", show=False,
                group=REPLAY_SPEED),
        Binding("right_square_bracket", "replay('speed', 1)", "Faster", show=False,
                group=REPLAY_SPEED),
        *HABIT_BINDINGS,  # esc back, ←/→ screens, e/E export, ctrl+s screenshot
    ]

    def __init__(self, collector: Collector, *, refresh: float = 1.0,
                 clock: Callable[[], float] = time.time, theme: str | None = None,
                 record_dir: Path | None = None, record_retention: float | None = None,
                 incidents: LiveIncidents | None = None,
                 footprint: Callable[[], Footprint | None] | None = None,
                 prices: Prices | None = None, version: str = "",
                 first: Snapshot | None = None) -> None:
        super().__init__()
        self.prices = prices  # the config's [prices], for the Report screen's cost
        # The version its recordings state: handed down by the command line, above the TUI.
        self.session = Session(
            collector, emit=self._post_event,
            recording=LiveRecording(record_dir, record_retention, clock=clock, version=version),
            incidents=incidents, footprint=footprint, first=first)
        # A source that can be driven as a replay (a demo scenario) is (the session
        # finds it by the protocol): the Timeline screen and space work on it.
        self.timeline: TimelineControl | None = self.session.timeline
        self.refresh_seconds = refresh
        self.clock = clock
        self.snapshot: Snapshot | None = None
        self.data: ViewData | None = None
        self.failure: str | None = None
        self.last_ok: float | None = None
        self.history: dict[str, deque[float]] = {}
        self.chart_history = ChartHistory()  # what the charts plot, one small sample a frame
        self._collecting = False
        self._again = False
        self._dirty: set[str] = set()
        self._retired: ViewData | None = None  # the data just replaced, freed after the paint
        self._applied_at = float("-inf")  # when apply last painted (the clock's time)
        self.incident_state = IncidentState()
        self.footprint: Footprint | None = None  # quotatop's own, as of the data shown
        if theme:
            self.theme = theme

    @property
    def collector(self) -> Collector:
        """The source, as the session drives it (one reference: the session's)."""
        return self.session.collector

    @property
    def recording(self) -> LiveRecording:
        return self.session.recording

    @property
    def live_incidents(self) -> LiveIncidents:
        return self.session.incidents

    @property
    def paused(self) -> bool:
        return self.session.paused

    def _post_event(self, event: SessionEvent) -> None:
        """The session's emit (a worker thread): each event becomes its typed message,
        handed to that message's handler on the UI thread by ``call_from_thread``.
        Not through the message queue: there the first frame waited behind the
        start-up's layout messages (bench/tui.py: 350-400 ms, not 270 ms), and the
        worker must go on only once the handler ran, so that the incident feed and a
        recording's keyframe that follow never hold the GIL against the paint."""
        message = as_message(event)
        with contextlib.suppress(RuntimeError):  # the app is already gone
            self.call_from_thread(getattr(self, message.handler_name), message)

    # layout ----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("quotatop · waiting for the first snapshot…", id="header")
        yield Static(id="banner")
        views: list[View] = [OverviewView(), QuotaView(), PriorityView(), ElasticView(),
                             QueueView(), NodesView(), TimelineView(self.timeline),
                             IncidentsView()]
        with TabbedContent(initial="overview"):
            for i, (vid, title, view) in enumerate(
                    zip(VIEW_IDS, VIEW_TITLES, views, strict=True), 1):
                view.id = f"view-{vid}"
                with TabPane(f"{i} {title}", id=vid):
                    yield view
        yield LeanFooter()

    def on_mount(self) -> None:
        # Queries go to the main screen even while help or a job detail is on top.
        self.main = self.screen
        self.screen_change_signal.subscribe(self, self._on_screen_change)
        self.sub_title = self.collector.name
        # The first frame even when paused: `replay FILE --at 03:12` opens paused at
        # that time, and poll() left it on "waiting for the first snapshot" until
        # space. A paused timeline's collect returns its current frame, unmoved.
        self.refresh_now()
        self._paint_header()  # "connecting to …" at once, before any data
        self.set_interval(self.refresh_seconds, self.poll)
        self.set_interval(1.0, self._tick)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < TABS_FULL, "-narrow-tabs")
        with contextlib.suppress(NoMatches, AttributeError):  # before on_mount: no header yet
            self._paint_header()

    def _tick(self) -> None:
        with contextlib.suppress(NoMatches):
            self._paint_header()

    # collection ------------------------------------------------------------
    def poll(self) -> None:
        if not self.session.paused:
            self.refresh_now()

    def refresh_now(self) -> None:
        if self._collecting:
            self._again = True  # one collect at a time; run once more when it returns
            return
        self._collecting = True
        self._again = False
        self._collect()

    # A described worker: Textual otherwise repr()s the arguments for the
    # description, which for a 100k-job snapshot costs ~0.5 s on the UI thread.
    @work(thread=True, group="collect", description="collect")
    def _collect(self) -> None:
        # A slow cluster blocks this thread, never the UI.
        self.session.refresh()

    def on_refresh_finished(self, message: RefreshFinished) -> None:
        # The next collect may start only now, after this one has fed the incident
        # detector and the recording, and its messages were handled (each in turn):
        # released at paint time, the tail of one collect overlapped the next and a
        # recording got frames 15, 17, 16.
        self._collecting = False
        if self._again:
            self.refresh_now()

    def on_session_updated(self, message: SessionUpdated) -> None:
        self.footprint = message.footprint
        # A collect that finishes while the app shuts down finds its widgets gone.
        # The ids queried are fixed by compose, so NoMatches only means teardown.
        with contextlib.suppress(NoMatches):
            self.apply(message.snap, message.derived, message.predictions)

    def on_prediction_requested(self, message: PredictionRequested) -> None:
        # After the frame is on screen: the predict worker's encoding holds the GIL.
        self.call_after_refresh(self._start_prediction)

    def on_session_repeated(self, message: SessionRepeated) -> None:
        # The same cluster as on screen (an idle cluster, or a live viewer between its
        # poller's frames): the rows, the core's answer and the incidents seen stand;
        # the header and banner say it is fresh. The view is painted again only every
        # UNCHANGED_REPAINT seconds, for what reads the clock (waits, ages, the charts'
        # time axis): an idle screen costs next to nothing (issue #32).
        with contextlib.suppress(NoMatches):
            if self.data is None:
                return
            if self.clock() - self._applied_at >= UNCHANGED_REPAINT:
                self.apply(message.snap, self.data.derived, self.data.predictions)
                return
            self.snapshot = message.snap
            self.failure = None
            written = _live_written_at(message.snap) if self.timeline is None else None
            if written is not None:
                self.last_ok = written
            elif not message.snap.stale:
                self.last_ok = self.clock()
            self._paint_header()

    def on_source_failed(self, message: SourceFailed) -> None:
        self.failure = message.reason
        with contextlib.suppress(NoMatches):
            self._paint_header()

    def _start_prediction(self) -> None:
        box = self.session.next_prediction()
        if box is not None:
            self._predict(box)

    # A worker keeps its arguments until it ends: the snapshot goes in a box that the
    # session empties once it is encoded (tui/session.py).
    @work(thread=True, group="predict", description="core predict")
    def _predict(self, box: list[Snapshot]) -> None:
        self.session.predict(box)

    def on_predictions_ready(self, message: PredictionsReady) -> None:
        self.session.prediction_shown()
        preds = message.predictions
        if self.data is not None:
            # An answer for an older snapshot still holds for the jobs that are
            # still pending (looked up by id); at 100k jobs the core may take
            # longer than a refresh, and dropping it would show none ever.
            if self.session.prediction_waiting:  # a newer snapshot waits its turn
                preds = preds.updating()
            self.data.predictions = preds
            self._dirty = set(VIEW_IDS)
            with contextlib.suppress(NoMatches):
                self._paint_active()
        self._start_prediction()  # a newer snapshot arrived meanwhile

    def on_incidents_changed(self, message: IncidentsChanged) -> None:
        self.incident_state = message.state
        if self.data is not None:
            self.data.incidents = message.state
            self._dirty |= {"overview", "incidents", "timeline"}
            with contextlib.suppress(NoMatches):
                self._paint_active()
                self._paint_header()

    def on_recording_state_changed(self, message: RecordingStateChanged) -> None:
        with contextlib.suppress(NoMatches):
            self._paint_header()

    def apply(self, snap: Snapshot, derived: Derived, preds: Predictions) -> None:
        """Show a new snapshot (UI thread). Cheap: only the visible view paints."""
        self._applied_at = self.clock()
        self.snapshot = snap
        self.failure = None
        if not snap.stale:
            self.last_ok = self.clock()
        written = _live_written_at(snap) if self.timeline is None else None
        if written is not None:
            # A live viewer's data is as old as the poller's frame, not this collect.
            self.last_ok = written
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
        # In a replay or a played scenario "now" is the frame's own time, so ages and
        # waits read as they did then, not as seen from today's wall clock.
        now = snap.taken_at if self.timeline is not None and snap.taken_at else self.clock()
        self.chart_history.add(sample_of(derived, self._frame_time(snap, now)))
        # Freeing a 100k-job snapshot takes 30-50 ms: after the paint, not in it.
        self._retired = self.data
        self.call_after_refresh(self._drop_retired)
        self.data = ViewData(snap=snap, derived=derived, predictions=preds, now=now,
                             history=hist, incidents=self.incident_state,
                             footprint=self.footprint, charts=self.chart_history)
        self._dirty = set(VIEW_IDS)
        self._paint_active()
        self._paint_header()
        active = self.active_view
        for vid in VIEW_IDS:
            if vid != active:  # hidden: let go of the old snapshot's jobs until shown
                with contextlib.suppress(NoMatches):
                    self.view(vid).release()

    def _frame_time(self, snap: Snapshot, now: float) -> float:
        """Where a frame sits on the charts' time axis: its own time, or for a replay
        whose frames are counted in steps (the fifo seed stamps them with the wall
        clock), the step the timeline is at."""
        tl = self.timeline
        if tl is None:
            return snap.taken_at or now
        if tl.start_time <= snap.taken_at <= tl.end_time:
            return snap.taken_at
        return tl.time_at(tl.position)

    def _drop_retired(self) -> None:
        self._retired = None

    # painting --------------------------------------------------------------
    @property
    def active_view(self) -> str:
        return self.main.query_one(TabbedContent).active or "overview"

    def view(self, vid: str) -> View:
        return self.main.query_one(f"#view-{vid}", View)

    def _on_screen_change(self, screen: Screen[Any]) -> None:
        if screen is self.main:  # back from help, a detail or the report: what came
            self._paint_active()  # while it was open, painted once

    def _paint_active(self) -> None:
        vid = self.active_view
        if self.data is None or vid not in self._dirty:
            return
        if self.screen is not self.main:
            # Covered by help, a job's detail or the report: the view stays dirty and
            # is painted when it shows again. Painting it beneath rendered its charts
            # on every refresh (issue #32: the help left open cost 6 % of a core).
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
        room = self.size.width - 2  # the header's padding
        # The first that fits: a narrow terminal gives up the slow-round note, the
        # word "refreshed", the source, then the cluster; the refresh age and its
        # cadence ("every 2s") stay, they say whether the screen is live.
        waiting = self._in_flight()
        for drop in range(5):
            t = self._header_text(snap, now, waiting, drop)
            if t.cell_len <= room:
                break
        update_static(self.main.query_one("#header", Static), t)
        self._paint_banner(snap, now)

    def _header_text(self, snap: Snapshot | None, now: float,
                     waiting: list[tuple[str, float]], drop: int) -> Text:
        """The header line, leaving out the ``drop`` least needed of its parts."""
        t = Text()
        t.append("quotatop", style="bold")
        tl = self.timeline
        if self.session.paused:
            t.append(" │ ")
            t.append("PAUSED", style="bold yellow")
        if tl is not None:
            t.append(f" │ replay {tl.position + 1}/{tl.frames} ×{tl.speed:g}")
        rec = self.recording
        if rec.active and rec.path is not None:
            t.append(" │ ")
            t.append(f"● REC {rec.path.name}", style="bold red")
            t.append(f" {rec.frames}", style="dim")
        n_open = len(self.incident_state.open)
        if n_open:
            t.append(" │ ")
            t.append(f"▲ {n_open} incident{'s' if n_open > 1 else ''}", style="bold yellow")
        if snap is not None:
            if drop < 4:
                t.append(f" │ {snap.cluster or 'cluster'}")
            if drop < 3:
                t.append(f" │ {snap.source or self.collector.name}")
            age = duration(now - self.last_ok) if self.last_ok is not None else "—"
            t.append(f" │ refreshed {age} ago" if drop < 2 else f" │ {age} ago")
            t.append(f" │ every {self._poll_words()}", style="dim")
            if waiting and waiting[0][1] >= 2 and drop < 1:  # a slow round: what it waits for
                t.append(f" │ waiting for {_names(waiting)}", style="dim")
        elif not self.failure:
            # Nothing to show yet: say what is being asked, not a blank screen.
            t.append(f" │ connecting to {self.collector.name}", style="bold")
            if waiting:
                t.append(f": {_names(waiting)}")
        return t

    def _poll_words(self) -> str:
        """How often the source is asked: the refresh, or the longer poll of a source
        that asks an idle cluster less often (SlurmCollector.poll_every)."""
        every = self.refresh_seconds
        poll = getattr(self.collector, "poll_every", None)
        base = getattr(self.collector, "refresh", None)
        if callable(poll) and isinstance(base, int | float):
            slower = float(poll())
            if slower > max(every, base):
                return f"{slower:g}s (nothing moved)"
        return f"{every:g}s"

    def _paint_banner(self, snap: Snapshot | None, now: float) -> None:
        banner = self.main.query_one("#banner", Static)
        reason = None
        if self.failure:
            reason = f"source failed: {self.failure}"
        elif snap is not None and snap.stale and snap.meta.get("live_poller") == "stale":
            reason = snap.stale_reason  # "poller stale: last frame 42s ago (…)"
        elif snap is not None and snap.stale:
            reason = f"source stale: {snap.stale_reason or 'no reason given'}"
        elif snap is not None:
            bad = [s for s in snap.status if not s.ok]
            if bad:
                reason = "; ".join(f"{s.name}: {s.error or 'failed'}" for s in bad[:3])
        lines = []
        if reason:
            kept = (f" — showing the last good data ({duration(now - self.last_ok)} old)"
                    if self.last_ok is not None else " — no data yet")
            lines.append(f"⚠ {reason}{kept}")
        if self.recording.error:
            lines.append(f"⚠ {self.recording.error}")
        if self.incident_state.error:
            lines.append(f"⚠ {self.incident_state.error}")
        if lines:
            # A Text, not a str: a str is Textual markup, and a reason quotes the cluster
            # ("[@click=app.quit]…" in a stderr line would become a link that acts).
            banner.update(Text("\n".join(lines)))
            banner.add_class("shown")
        else:
            banner.remove_class("shown")

    def _in_flight(self) -> list[tuple[str, float]]:
        """The source's requests still running (a collector that can say so, such as
        Slurm's: its commands and their seconds); read, never run, from here."""
        progress = getattr(self.collector, "progress", None)
        if progress is None:
            return []
        try:
            return list(progress())
        except Exception:  # progress is a courtesy: never a reason to fail the header
            return []

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._paint_active()
        self._focus_view(self.active_view)

    def _focus_view(self, vid: str) -> None:
        view = self.view(vid)
        focused = self.focused
        if focused is not None and (focused is view or view in focused.ancestors):
            return  # already inside (e.g. the filter box): keep it
        target = next((w for cls in (JobTable, PendingList, NodeGrid, DataTable)
                       for w in view.query(cls)), None)
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
            self.push_screen(HelpScreen(help_rows(help_sources())))

    def action_filter(self) -> None:
        self.show_view("queue")
        self.main.query_one(QueueView).open_filter()

    def action_toggle_pause(self) -> None:
        self.session.toggle_pause()
        self._paint_header()
        if self.active_view == "timeline":
            self.main.query_one(TimelineView).paint()

    def action_replay(self, what: str, arg: float) -> None:
        """A replay key from any screen: the Timeline view steps, seeks or changes
        speed, and repaints; a live source has no past to move in."""
        if self.timeline is None:
            self.notify("no replay to step in: a live source has no past (R records one)",
                        severity="warning", timeout=3)
            return
        getattr(self.main.query_one(TimelineView), f"action_{what}")(arg)
        self._paint_header()

    def action_refresh_now(self) -> None:
        self.refresh_now()

    def action_toggle_record(self) -> None:
        """R: start or stop recording what this session collects."""
        if self.recording.active:
            self._record_stop()
            self.notify("recording stopped", timeout=2)
        else:
            self._record_start(self.snapshot)
            self.notify(f"recording into {self.recording.directory}", timeout=2)

    @work(thread=True, group="record", description="record start")
    def _record_start(self, snap: Snapshot | None) -> None:
        self.session.record_start(snap)

    @work(thread=True, group="record", description="record stop")
    def _record_stop(self) -> None:
        self.session.record_stop()

    def on_unmount(self) -> None:
        # The recording's last frame is committed (the file stays readable), and
        # Textual's run() joins the collect thread before it returns: a collect waiting
        # on a hung Slurm or Prometheus held `q` for the rest of its deadline (7 s of
        # 10 measured), so a source that can cut its requests short is told to now.
        self.session.close()

    def action_whatif(self) -> None:
        """w: change a quota, QoS, weight or nodes on the snapshot on screen and see the
        predicted waits before and after (tui/whatif_dialog.py); the selected team first."""
        if self.data is None or isinstance(self.screen, WhatifScreen):
            return
        self.push_screen(WhatifScreen(self.data.snap, selected_row(self.view(self.active_view)),
                                      self.data.derived.unit))

    def action_report(self) -> None:
        """m: the period's report with charts, from the job runs the session can get: the
        scenario's or recording's frames, a live Slurm's sacct (tui/report_screen.py)."""
        if not isinstance(self.screen, ReportScreen):
            self.push_screen(ReportScreen(self.collector, self.recording.path, self.prices,
                                          self.snapshot))

    def action_next_theme(self) -> None:
        names = sorted(self.available_themes)
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names \
            else names[0]
        self.notify(f"theme: {self.theme}", timeout=2)

    def on_job_table_opened(self, event: JobTable.Opened) -> None:
        if self.data is None:
            return
        self.push_screen(JobDetailScreen(event.job, self.data.predictions.get(event.job),
                                         self.data.derived.unit, self.data.now,
                                         snap=self.data.snap))


def _live_written_at(snap: Snapshot) -> float | None:
    """When a live source's poller wrote this frame (recording/live_source.py sets
    it only for frames that were fresh then), or None."""
    try:
        return float(snap.meta["live_written_at"])
    except (KeyError, ValueError):
        return None


def _names(in_flight: list[tuple[str, float]]) -> str:
    """"squeue, sinfo, sprio … (3s)": the oldest request's age."""
    names = [n for n, _ in in_flight]
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"{shown} ({duration(in_flight[0][1])})"


def help_sources() -> list[tuple[str, Any]]:
    """(scope, class) in the help's order, for ``tui.help.help_rows``: here, where the
    app's classes are known, so that help.py imports none of them (no circle). A class
    whose BINDINGS the help should show is listed (a test checks that every class of
    tui/ declaring BINDINGS is, or is a dialog closing on esc)."""
    return [
        ("everywhere", QuotatopApp),
        ("tables", CursorList),
        ("tables", PendingList),
        ("tables", NodeGrid),
        ("tables", SortableTable),
        ("Overview", OverviewView),
        ("Queue", JobTable),
        ("Queue", QueueView),
        ("Timeline", TimelineView),
    ]
