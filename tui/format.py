"""Small text formatters shared by every view: numbers, ages, bars, sparklines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from quotatop.collectors.human import human_duration

DASH = "—"
_SPARK = "▁▂▃▄▅▆▇█"
_PARTIAL = " ▏▎▍▌▋▊▉"


def num(x: float | None, none: str = DASH) -> str:
    """A quantity without noise: 24, 0.5, 1.2k."""
    if x is None:
        return none
    if abs(x) >= 10_000:
        return f"{x / 1000:.0f}k"
    if abs(x) >= 1000:
        return f"{x / 1000:.1f}k"
    if x == int(x):
        return str(int(x))
    return f"{x:.1f}"


def pct(frac: float | None) -> str:
    return DASH if frac is None else f"{frac * 100:.0f}%"


def duration(seconds: float | None) -> str:
    """A duration as kubectl and k9s write it (45s, 5m30s, 25m, 7h59m, 3d4h): the one
    human format of collectors/human.py, shared with the commands and the core's
    reasons so a column and the reason beside it read alike; a dash for no value."""
    if seconds is None:
        return DASH
    return human_duration(seconds)


def until(ts: float | None, now: float) -> str:
    if ts is None:
        return DASH
    if ts <= now:
        return "now"
    return "in " + duration(ts - now)


def bar(frac: float, width: int) -> str:
    """A left-aligned horizontal bar with eighth-block resolution, exactly `width` wide."""
    frac = min(max(frac, 0.0), 1.0)
    eighths = round(frac * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_PARTIAL[part] if part and full < width else "")
    return text.ljust(width)


def sparkline(values: Sequence[float], width: int, top: float | None = None) -> str:
    """The last `width` values as block characters; `top` fixes the scale."""
    vals = list(values)[-width:]
    if not vals:
        return " " * width
    hi = top if top else max(vals)
    if hi <= 0:
        return (_SPARK[0] * len(vals)).rjust(width)
    out = "".join(_SPARK[min(7, max(0, round(v / hi * 7)))] for v in vals)
    return out.rjust(width)


def clock_label(t: float, span: float) -> str:
    """A short time for an axis or a list: the clock within two days, the date
    beyond; a scenario's step numbers (not epochs) as they are."""
    if span < 86400 * 2 and t > 1e8:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%S")
    if t > 1e8:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%m-%d %H:%M")
    return f"{t:g}"


def clock_time(ts: float) -> str:
    """An absolute time in UTC, as replays and the timeline show it."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def start_window(p10: float | None, p50: float | None, p90: float | None, now: float) -> str:
    """A start window as a person reads it: "14:07–14:09 UTC, likely 14:08" (the clock
    of the 10th and 90th percentile start, and the median); a day's date once it is not
    today; "now" for a start already due; beyond the horizon where the plans said so."""
    if p10 is None:
        return "beyond the horizon"

    def at(t: float) -> str:
        if t <= now:
            return "now"
        d, n = dt.datetime.fromtimestamp(t, dt.UTC), dt.datetime.fromtimestamp(now, dt.UTC)
        return d.strftime("%H:%M") if d.date() == n.date() else d.strftime("%m-%d %H:%M")

    lo = at(p10)
    mid = at(p50) if p50 is not None else "beyond the horizon"
    if p90 is None:
        return f"{lo} or later, likely {mid}"
    hi = at(p90)
    if lo == hi:
        return lo if lo == "now" else f"{lo} UTC"
    return f"{lo}–{hi} UTC, likely {mid}"
