"""Charts with axes and scales (textual-plotext): per team usage against its
guarantee and max, queue depth, cluster utilization and predicted wait per team.

Every team's chart shares one vertical scale, so a team at 0 reads as 0 beside a
team at 40. The ``draw_*`` functions only draw on a plotext ``Plot`` from the
samples the app keeps (tui/chart_data.py); the widgets decide what fits."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from quotatop.tui.chart_data import Points, Sample, team_points, usage_top
from quotatop.tui.derive import Derived, TeamRow
from quotatop.tui.format import clock_label, duration, num
from quotatop.tui.theme_colors import team_color
from quotatop.tui.timeline_protocol import IncidentMark

RGB = tuple[int, int, int]
GUARANTEE: RGB = (135, 215, 135)
CEILING: RGB = (255, 135, 135)
QUEUE: RGB = (255, 215, 95)
UTIL: RGB = (95, 215, 215)
NOW: RGB = (175, 175, 255)
MIN_W = 34  # a chart narrower than this has no room for its axis labels and a line
MIN_H = 7  # nor shorter: title, frame, three ticks, the time labels
TEAM_MIN_W = 26  # one team's small chart
MAX_POINTS = 120  # per line: plotext takes ~0.05 ms a point; a chart shows no finer
# No value is drawn beyond this: plotext rounds through x * 1e8, so a finite 1e308
# became inf and OverflowError killed the TUI (issue #35). The sources refuse such
# values (a GPU count above 1e6 is not one); this is the chart's own last guard.
LIMIT = 1e15


def _bounded(v: float) -> float:
    return min(max(v, -LIMIT), LIMIT)


def rgb(hex_color: str) -> RGB:
    h = hex_color.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _x_range(xs: Sequence[float], x_range: tuple[float, float] | None) -> tuple[float, float]:
    lo, hi = x_range if x_range is not None else (min(xs, default=0.0), max(xs, default=0.0))
    return (lo, hi) if hi > lo else (lo - 1.0, lo + 1.0)


def _time_axis(plt: Plot, lo: float, hi: float) -> None:
    span = hi - lo
    ticks = [lo, lo + span / 2, hi]
    plt.xlim(lo, hi)
    plt.xticks(ticks, [clock_label(t, span) for t in ticks])


def _value_axis(plt: Plot, top: float, fmt: Callable[[float], str] = num) -> None:
    top = _bounded(max(top, 1e-9))
    ticks = [0.0, top / 2, top]
    plt.ylim(0.0, top)
    plt.yticks(ticks, [fmt(t) for t in ticks])


def thin(xs: Sequence[float], ys: Sequence[float],
         most: int) -> tuple[list[float], list[float]]:
    """At most ``most`` points, each the highest of its run (a peak is what a
    person looks for), the last point kept: plotext's cost grows with points,
    and a terminal has no more columns than this to show them."""
    if len(xs) <= most:
        return list(xs), list(ys)
    step = -(-len(xs) // most)  # ceiling division
    out_x, out_y = [], []
    for i in range(0, len(xs), step):
        run = range(i, min(i + step, len(xs)))
        top = max(run, key=lambda k: ys[k])
        out_x.append(xs[top])
        out_y.append(ys[top])
    if out_x[-1] != xs[-1]:
        out_x.append(xs[-1])
        out_y.append(ys[-1])
    return out_x, out_y


def _line(plt: Plot, xs: Sequence[float], ys: Sequence[float], color: RGB,
          label: str | None = None, top: float = LIMIT) -> None:
    """The points as a line, each value kept within the value axis [0, top]: plotext
    draws a line to a point far outside the axis before it cuts it (a point at -1e15
    took 22 GB)."""
    xs, ys = thin(xs, ys, MAX_POINTS)
    top = _bounded(top)
    ys = [min(max(y, 0.0), top) for y in ys]
    if len(xs) == 1:  # one frame so far: a dot, not an empty frame
        plt.scatter(list(xs), list(ys), color=color, marker="●", label=label)
    elif xs:
        plt.plot(list(xs), list(ys), color=color, marker="braille", label=label)


def draw_team_usage(plt: Plot, row: TeamRow, points: Points, top: float,
                    x_range: tuple[float, float] | None = None) -> None:
    """One team's usage over time, its guarantee and max as level lines."""
    xs = [t for t, _ in points.get(row.name, [])]
    ys = [v for _, v in points.get(row.name, [])]
    lo, hi = _x_range(xs, x_range)
    if row.guarantee is not None and 0.0 <= row.guarantee <= top:
        plt.hline(_bounded(row.guarantee), GUARANTEE)
    if row.max is not None and 0.0 <= row.max <= top:
        plt.hline(_bounded(row.max), CEILING)
    _line(plt, xs, ys, rgb(team_color(row.name)), top=top)
    parts = [row.name, f"used {num(row.used)}"]
    if row.guarantee is not None:
        parts.append(f"guar {num(row.guarantee)}")
    if row.max is not None:
        parts.append(f"max {num(row.max)}")
    plt.title(" · ".join(parts))
    _time_axis(plt, lo, hi)
    _value_axis(plt, top)


def draw_usage_all(plt: Plot, rows: Sequence[TeamRow], points: Points, top: float,
                   unit: str, x_range: tuple[float, float] | None = None) -> None:
    """Every team's usage on one scale, one line each in the team's colour."""
    xs_all = [t for r in rows for t, _ in points.get(r.name, [])]
    for r in rows:
        pts = points.get(r.name, [])
        _line(plt, [t for t, _ in pts], [v for _, v in pts], rgb(team_color(r.name)),
              label=r.name, top=top)
    plt.title(f"{unit.upper()} used by team")
    _time_axis(plt, *_x_range(xs_all, x_range))
    _value_axis(plt, top)


def draw_queue(plt: Plot, samples: Sequence[Sample],
               x_range: tuple[float, float] | None = None) -> None:
    xs = [s.at for s in samples]
    ys = [float(s.pending_jobs) for s in samples]
    _line(plt, xs, ys, QUEUE, top=max([1.0, *ys]))
    now = f" · {samples[-1].pending_jobs} now" if samples else ""
    plt.title(f"queue depth (pending jobs){now}")
    _time_axis(plt, *_x_range(xs, x_range))
    _value_axis(plt, max([1.0, *ys]), lambda v: f"{v:.0f}" if v == int(v) else f"{v:.1f}")


def draw_utilization(plt: Plot, samples: Sequence[Sample], unit: str,
                     x_range: tuple[float, float] | None = None) -> None:
    known = [s for s in samples if s.utilization is not None]
    xs = [s.at for s in known]
    _line(plt, xs, [100.0 * (s.utilization or 0.0) for s in known], UTIL, top=100.0)
    if known:
        last = 100.0 * (known[-1].utilization or 0.0)
        plt.title(f"cluster {unit.upper()} utilization · {last:.0f}%")
    else:
        plt.title("cluster utilization: the source has no node inventory")
    _time_axis(plt, *_x_range(xs, x_range))
    _value_axis(plt, 100.0, lambda v: f"{v:.0f}%")


def draw_waits(plt: Plot, rows: Sequence[TeamRow], waits: dict[str, float]) -> None:
    """Median predicted wait of each team's pending jobs, as bars."""
    names = [r.name for r in rows if r.name in waits]
    if not names:
        plt.title("predicted wait: no pending job has a predicted start")
        return
    longest = max(waits[n] for n in names)
    scale, label = (3600.0, "h") if longest >= 2 * 3600 else (60.0, "min")
    values = [_bounded(waits[n] / scale) for n in names]
    plt.bar(names, values, orientation="horizontal", width=0.4,
            color=[rgb(team_color(n)) for n in names])
    plt.title(f"predicted wait, median ({label}) · longest {duration(longest)}")
    top = max(values) or 1.0
    ticks = [0.0, top / 2, top]
    plt.xticks(ticks, [f"{t:.1f}" if t < 10 else f"{t:.0f}" for t in ticks])


def mark_times(plt: Plot, marks: Sequence[IncidentMark], now: float | None) -> None:
    """Incidents (red/yellow) and the shown frame (blue) as vertical lines."""
    for m in marks:
        plt.vline(m.at, CEILING if m.severity == "critical" else QUEUE)
    if now is not None:
        plt.vline(now, NOW)


class Chart(PlotextPlot):
    """A plot redrawn whole on a paint whose inputs changed.

    ``key`` names what the drawing reads (its samples, rows, predictions): the same
    key at the same size and theme draws nothing, so a repaint for an incident or a
    prediction costs no chart it does not touch (plotext builds a chart in ~5 ms,
    and a screen of six was redrawn three times a refresh)."""

    _drawn: tuple[object, ...] | None = None

    def draw(self, draw: Callable[[Plot], None], key: tuple[object, ...] | None = None) -> None:
        if key is not None:
            key = (*key, self.size, self.app.theme)
            if self._drawn is not None and same_key(self._drawn, key):
                return
        self._drawn = key
        plt = self.plt
        plt.clear_figure()
        draw(plt)
        self.refresh()


def same_key(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Element by element: the same object, or equal values (a snapshot compared by
    identity first: equal content with a new object is rare and costs a deep look)."""
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


class ChartPanel(Vertical):
    """The Overview's charts, in the height the team table leaves. Tall enough: one
    small chart per team (a shared scale) over the cluster's charts; else one row
    with every team on one chart. Charts that do not fit the width are left out,
    the least needed last in the row: usage, queue, utilization, wait."""

    def compose(self) -> ComposeResult:
        yield Horizontal(id="chart-teams")
        with Horizontal(id="chart-trends"):
            for key in ("usage", "queue", "util", "wait"):
                yield Chart(id=f"chart-{key}")

    def on_resize(self) -> None:
        # What fits changed; the view paints again with the app's current data.
        repaint = next((getattr(a, "repaint", None) for a in self.ancestors
                        if hasattr(a, "repaint")), None)
        if repaint is not None:
            repaint()

    def shown(self) -> list[str]:
        """Which charts are on screen (for tests and the help line)."""
        # A team's chart is named for the team; the cluster's have ids.
        return [c.id.removeprefix("chart-") if c.id else str(c.name) for c in self.query(Chart)
                if c.display and c.parent is not None and c.parent.display]

    def show(self, derived: Derived, samples: list[Sample], points: Points,
             waits: Callable[[], dict[str, float]],
             waits_key: tuple[object, ...] = ()) -> None:
        """``waits`` is asked only when its chart fits: it reads every pending job;
        ``waits_key`` names what it reads (a chart with the same inputs is not redrawn)."""
        width, height = self.size.width, self.size.height
        rows = derived.teams
        top = usage_top(points, [r.guarantee for r in rows] + [r.max for r in rows])
        teams_row = self.query_one("#chart-teams", Horizontal)
        tall = (height >= 2 * MIN_H and bool(rows)
                and width // max(1, len(rows)) >= TEAM_MIN_W)
        teams_row.display = tall and height >= MIN_H
        if tall:
            self._team_charts(teams_row, rows, points, top)
        wanted = (["queue", "util", "wait"] if tall else ["usage", "queue", "util", "wait"])
        fits = max(1, width // MIN_W) if height >= MIN_H else 0
        unit = derived.unit
        draws: dict[str, tuple[Callable[[Plot], None], tuple[object, ...]]] = {
            "usage": (lambda p: draw_usage_all(p, rows, points, top, unit),
                      (rows, points, top, unit)),
            "queue": (lambda p: draw_queue(p, samples), (samples,)),
            "util": (lambda p: draw_utilization(p, samples, unit), (samples, unit)),
            # It reads the teams' names only: their usage moving is no reason to redraw.
            "wait": (lambda p: draw_waits(p, rows, waits()),
                     (tuple(r.name for r in rows), *waits_key)),
        }
        for name, (draw, key) in draws.items():
            chart = self.query_one(f"#chart-{name}", Chart)
            chart.display = name in wanted[:fits]
            if chart.display:
                chart.draw(draw, key)

    def _team_charts(self, row: Horizontal, rows: list[TeamRow], points: Points,
                     top: float) -> None:
        names = [r.name for r in rows]
        charts = list(row.query(Chart))
        if [c.name for c in charts] != names:
            row.remove_children()
            charts = [Chart(name=n) for n in names]
            row.mount(*charts)
        for chart, r in zip(charts, rows, strict=True):
            chart.draw(lambda p, r=r: draw_team_usage(p, r, points, top),  # type: ignore[misc]
                       (r, points.get(r.name), top))


class TimelineCharts(Vertical):
    """Usage by team and queue depth under the Timeline's bar, over the replay's
    whole span, with its incident marks and the shown frame as vertical lines."""

    def compose(self) -> ComposeResult:
        yield Chart(id="tl-usage")
        yield Chart(id="tl-queue")

    def show(self, derived: Derived, samples: list[Sample], marks: Sequence[IncidentMark],
             span: tuple[float, float] | None, now: float | None) -> None:
        """The frames shown so far (not a source's series: they would not line up with
        the replay's marks)."""
        rows = derived.teams
        points = team_points(samples, [], [r.name for r in rows])
        top = usage_top(points, [r.guarantee for r in rows])

        def usage(p: Plot) -> None:
            draw_usage_all(p, rows, points, top, derived.unit, span)
            mark_times(p, marks, now)

        def queue(p: Plot) -> None:
            draw_queue(p, samples, span)
            mark_times(p, marks, now)

        # Short of room for both (80×24): usage alone, at a height that can be read.
        both = self.size.height >= 2 * MIN_H
        self.query_one("#tl-queue", Chart).display = both
        self.query_one("#tl-usage", Chart).draw(usage)
        if both:
            self.query_one("#tl-queue", Chart).draw(queue)

    def on_resize(self) -> None:
        repaint = next((getattr(a, "repaint", None) for a in self.ancestors
                        if hasattr(a, "repaint")), None)
        if repaint is not None:
            repaint()
