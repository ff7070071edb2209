"""What the Timeline screen needs from a replay. The replay source implements
this; the TUI finds it with ``timeline_of(collector)``.

Frames are indexed 0..frames-1; times are seconds since the epoch. While
playing, the replay advances by (wall time since the last collect) × speed, so
×1000 plays a day of recording in under a minute and ``collect()`` returns the
frame at the new position. Paused, ``collect()`` returns the current frame.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

# Collectors never import the TUI: the mark is theirs, re-exported here.
from collectors.timeline_base import IncidentMark

__all__ = ["SPEEDS", "IncidentMark", "TimelineControl", "timeline_of"]

SPEEDS = (1.0, 2.0, 5.0, 10.0, 50.0, 100.0, 1000.0)


@runtime_checkable
class TimelineControl(Protocol):
    @property
    def frames(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def paused(self) -> bool: ...
    @property
    def speed(self) -> float: ...
    @property
    def start_time(self) -> float: ...
    @property
    def end_time(self) -> float: ...

    def time_at(self, index: int) -> float: ...
    def pause(self) -> None: ...
    def play(self) -> None: ...
    def step(self, frames: int = 1) -> None: ...  # negative steps back; pauses
    def seek(self, t: float) -> None: ...  # to the frame at or before time t
    def set_speed(self, speed: float) -> None: ...
    def incident_marks(self) -> list[IncidentMark]: ...


def timeline_of(collector: object) -> TimelineControl | None:
    """The collector itself, or its ``timeline`` attribute, when it is a replay."""
    for cand in (collector, getattr(collector, "timeline", None)):
        if cand is not None and isinstance(cand, TimelineControl):
            return cand
    return None
