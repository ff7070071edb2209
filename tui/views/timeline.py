"""Timeline (replay): position bar with incident markers, pause/play, step,
seek and speed ×1…×1000, driving a ``TimelineControl``."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from quotatop.tui.format import clock_label
from quotatop.tui.live_incidents import IncidentState
from quotatop.tui.timeline_protocol import SPEEDS, IncidentMark, TimelineControl
from quotatop.tui.views.base import View, ViewData
from quotatop.tui.widgets.charts import TimelineCharts

# One line at 80 columns.
HELP = "space play/pause  , . step  < > seek 5%  home/end  + - speed  click bar: seek"


_clock = clock_label  # one time format for the bar, the list and the charts


def position_bar(tl: TimelineControl, width: int,
                 marks: list[IncidentMark] | None = None) -> Text:
    frames = max(1, tl.frames)
    span = max(1e-9, tl.end_time - tl.start_time)
    cells = ["─"] * width
    styles = ["dim"] * width
    pos = round(tl.position / max(1, frames - 1) * (width - 1)) if frames > 1 else 0
    for i in range(pos):
        cells[i], styles[i] = "━", "bold"
    for m in tl.incident_marks() if marks is None else marks:
        x = round((m.at - tl.start_time) / span * (width - 1))
        if 0 <= x < width:
            cells[x] = "▲"
            styles[x] = "bold red" if m.severity == "critical" else "bold yellow"
    cells[pos], styles[pos] = "●", "bold reverse"
    t = Text()
    for c, s in zip(cells, styles, strict=True):
        t.append(c, style=s)
    return t


class TimelineView(View):
    title = "Timeline"
    # , . < > as the App's replay keys (the help says those once); tooltips: tui/help.py
    BINDINGS = [
        Binding("comma", "step(-1)", "Step back"), Binding("full_stop", "step(1)", "Step"),
        Binding("less_than_sign", "seek_frac(-0.05)", "Seek back"),
        Binding("greater_than_sign", "seek_frac(0.05)", "Seek fwd"),
        Binding("home", "seek_edge(0)", "Start", tooltip="seek to the start"),
        Binding("end", "seek_edge(1)", "End", tooltip="seek to the end"),
        Binding("plus,equals_sign", "speed(1)", "Faster", tooltip="faster, as ]"),
        Binding("minus", "speed(-1)", "Slower", tooltip="slower, as ["),
    ]
    can_focus = True

    def __init__(self, timeline: TimelineControl | None, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.timeline = timeline
        self._marks_error: str | None = None  # why the replay's marks cannot be had

    def _replay_marks(self, tl: TimelineControl) -> list[IncidentMark]:
        """The replay's incident marks, or none once they failed. A replay finds them
        by reading every frame: one damaged frame raised out of paint() and took the
        whole TUI down at mount (tests/test_tui_faults.py). The failure is kept, not
        retried on every paint: each try reads the recording again on the UI thread."""
        if self._marks_error is None:
            try:
                return tl.incident_marks()
            except Exception as e:  # any source's failure: the banner's job, not a crash
                self._marks_error = f"{type(e).__name__}: {e}"
        return []

    def compose(self) -> ComposeResult:
        yield Static(id="tl-state")
        yield Static(id="tl-bar")
        yield Static(HELP, id="tl-help")
        yield TimelineCharts(id="tl-charts")  # usage and queue under the incident marks
        yield Static(id="tl-incidents")

    def on_mount(self) -> None:
        self.paint()

    def show_data(self, data: ViewData) -> None:
        self._incidents = data.incidents
        self.paint()

    def _live_marks(self) -> list[IncidentMark]:
        """Incidents this session's live detection opened (open or closed since)."""
        incidents: IncidentState | None = getattr(self, "_incidents", None)
        if incidents is None:
            return []
        seen = [*incidents.closed, *incidents.open]
        return [IncidentMark(at=i.opened_at, title=f"{i.kind}: {i.summary}",
                             severity=i.severity) for i in sorted(seen, key=lambda i: i.opened_at)]

    def paint(self) -> None:
        tl = self.timeline
        state = self.query_one("#tl-state", Static)
        if tl is None:
            state.update(Text("The timeline needs a replay: quotatop --source replay FILE\n"
                              "(live sources have no past to seek in; R records one)",
                              style="dim"))
            marks = self._live_marks()
            inc = Text("Incidents this session\n", style="bold")
            if not marks:
                inc.append("none so far", style="dim")
            for m in marks[-20:]:
                inc.append(f"▲ {_clock(m.at, 0)}  ", style="red" if m.severity == "critical"
                           else "yellow")
                inc.append(f"{m.title}\n")
            self.query_one("#tl-incidents", Static).update(inc)
            self._paint_charts(marks, None, None)
            return
        span = tl.end_time - tl.start_time
        t = Text()
        t.append("⏸ paused" if tl.paused else "▶ playing", style="bold yellow" if tl.paused
                 else "bold green")
        t.append(f"   ×{tl.speed:g}   frame {tl.position + 1}/{tl.frames}   ")
        t.append(f"{_clock(tl.time_at(tl.position), span)}  "
                 f"({_clock(tl.start_time, span)} → {_clock(tl.end_time, span)})", style="dim")
        state.update(t)
        width = max(10, (self.size.width or 80) - 2)
        marks = self._replay_marks(tl)
        self.query_one("#tl-bar", Static).update(position_bar(tl, width, marks))
        inc = Text("Incidents\n", style="bold")
        if self._marks_error is not None:
            inc.append(f"cannot mark incidents: {self._marks_error}", style="dim")
        elif not marks:
            inc.append("none in this recording", style="dim")
        for m in marks[:20]:
            inc.append(f"▲ {_clock(m.at, span)}  ", style="red" if m.severity == "critical"
                       else "yellow")
            inc.append(f"{m.title}\n")
        self.query_one("#tl-incidents", Static).update(inc)
        self._paint_charts(marks, (tl.start_time, tl.end_time), tl.time_at(tl.position))

    def _paint_charts(self, marks: list[IncidentMark], span: tuple[float, float] | None,
                      now: float | None) -> None:
        data: ViewData | None = getattr(self.app, "data", None)
        if data is not None:
            samples = data.charts.samples(*(span or (None, None)))
            self.query_one(TimelineCharts).show(data.derived, samples, marks, span, now)

    # actions ---------------------------------------------------------------
    def action_step(self, n: int) -> None:
        if self.timeline:
            self.timeline.step(n)
            self._changed()

    def action_seek_frac(self, frac: float) -> None:
        tl = self.timeline
        if tl:
            span = tl.end_time - tl.start_time
            before = tl.position
            tl.seek(tl.time_at(tl.position) + frac * span)
            if tl.position == before and frac:
                # Frames further apart than the seek: it landed on the same frame, and a
                # held key would never move; a seek moves one frame at least.
                tl.step(1 if frac > 0 else -1)
            self._changed()

    def action_seek_edge(self, end: int) -> None:
        tl = self.timeline
        if tl:
            tl.seek(tl.end_time if end else tl.start_time)
            self._changed()

    def action_speed(self, direction: int) -> None:
        tl = self.timeline
        if tl:
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - tl.speed))
            tl.set_speed(SPEEDS[min(max(0, i + direction), len(SPEEDS) - 1)])
            self._changed()

    def on_click(self, event: events.Click) -> None:
        tl = self.timeline
        bar = self.query_one("#tl-bar", Static)
        offset = event.get_content_offset(bar)
        if tl is None or offset is None or event.widget is not bar:
            return
        width = max(1, bar.content_size.width - 1)
        tl.seek(tl.start_time + min(1.0, max(0.0, offset.x / width)) *
                (tl.end_time - tl.start_time))
        self._changed()

    def _changed(self) -> None:
        self.paint()
        self.app.call_later(self.app.refresh_now)  # type: ignore[attr-defined]
