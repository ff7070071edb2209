"""``--at``: a moment of a timeline (a recording, a demo scenario) as the user writes it.
Its own module because both ``replay`` and ``predict`` read it, and ``replay`` calls
``predict``'s core: kept in either, the two would import each other."""

from __future__ import annotations

import datetime as dt
import math

from quotatop.collectors.errors import UserError
from quotatop.collectors.human import human_duration


def parse_at(text: str, start: float, end: float) -> float:
    """``HH:MM[:SS]`` (local time of day, the first such moment at or after the
    recording's start), ``+90s``/``+2h`` (offset from the start), an ISO date-time,
    or epoch seconds; a moment outside [start, end] is refused with the recording's
    span, not answered silently with its first or last frame."""
    at = _parse_at(text, start)
    if not start <= at <= end:
        raise UserError(f"--at {text!r}: outside the recording, which spans "
                        f"{_moment(start)} to {_moment(end)} ({_span(end - start)})")
    return at


def _moment(t: float) -> str:
    try:
        return dt.datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    except (ValueError, OverflowError, OSError):
        return f"{t:.0f} s"


def _span(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    return human_duration(seconds)  # the one human format, as the TUI's timeline


def _parse_at(text: str, start: float) -> float:
    from quotatop.recording.store import parse_duration

    s = text.strip()
    if s.startswith("+"):
        try:
            return start + parse_duration(s[1:], allow_zero=True)
        except ValueError as e:
            raise UserError(f"--at {text!r}: {e}") from None
    try:
        epoch = float(s)
    except ValueError:
        pass
    else:
        if not math.isfinite(epoch):
            raise UserError(f"--at {text!r}: not a time (use HH:MM, +DURATION, an ISO "
                            "date-time or epoch seconds)")
        return epoch
    try:
        return _clock_or_date(s, text, start)
    except (ValueError, OverflowError, OSError) as e:
        # Dates at the edge of the calendar (year 1, 9999 in a zone behind UTC) and frame
        # times past what the platform's clock functions take: one line, not a traceback.
        raise UserError(f"--at {text!r}: out of range ({e})") from None


def _clock_or_date(s: str, text: str, start: float) -> float:
    """``HH:MM[:SS]`` at or after ``start``, or an ISO date-time (local if no zone)."""
    try:
        tod = dt.time.fromisoformat(s)
    except ValueError:
        tod = None
    if tod is not None and ":" in s and "T" not in s and "-" not in s:
        day = dt.datetime.fromtimestamp(start).astimezone()
        cand = day.replace(hour=tod.hour, minute=tod.minute, second=tod.second, microsecond=0)
        if cand.timestamp() < start - 1e-6:
            cand += dt.timedelta(days=1)
        return cand.timestamp()
    try:
        when = dt.datetime.fromisoformat(s)
    except ValueError:
        raise UserError(f"--at {text!r}: use HH:MM, +DURATION, an ISO date-time or "
                        "epoch seconds") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return when.timestamp()
