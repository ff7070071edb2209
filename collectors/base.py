"""The one interface every source implements, and the optional capabilities a source may
add. The TUI and the commands reach a source only through these: never by its class.

Capabilities, each found by its shape (a runtime-checkable protocol or one method):

- ``TimelineControl``: a replay. Frames indexed 0..frames-1, times in seconds since the
  epoch; while playing, the replay advances by (wall time since the last collect) × speed,
  so ×1000 plays a day of recording in under a minute and ``collect()`` returns the frame
  at the new position; paused, ``collect()`` returns the current frame. ``timeline_of``
  finds it on a collector (or on its ``timeline`` attribute).
- ``as_timeline()``: a source that can also be driven as a replay (a demo scenario)
  returns that replay; ``driven_as_timeline`` asks for it.
- ``accounting(argv)``: past jobs from the scheduler's accounting (Slurm's sacct).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from quotatop.collectors.model import Snapshot
from quotatop.collectors.timeline_base import IncidentMark


@runtime_checkable
class Collector(Protocol):
    """A source of snapshots. ``collect`` never raises for a source outage:
    it returns the last good data marked ``stale`` with the reason."""

    name: str

    def collect(self) -> Snapshot: ...

    def close(self) -> None: ...


@runtime_checkable
class TimelineControl(Protocol):
    """What the Timeline screen needs from a replay (quotatop.collectors.timeline_base.TimelineBase
    gives the state every replay keeps the same way)."""

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


def driven_as_timeline(collector: Collector) -> Collector:
    """The collector a viewer drives: the replay a source offers through ``as_timeline``
    (so a demo scenario pauses, steps and seeks like a recording), else the source itself."""
    as_timeline = getattr(collector, "as_timeline", None)
    return as_timeline() if callable(as_timeline) else collector
