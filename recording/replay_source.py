"""A recording played back as a Collector, with a timeline controller.

``ReplaySource`` implements ``quotatop.collectors.base.TimelineControl`` on
``quotatop.collectors.timeline_base.TimelineBase`` (collectors never import the TUI):
pause/play, step, seek to a time, speed.
While playing, the position advances by (wall time since the last collect) ×
speed in recording time; paused, ``collect()`` returns the current frame.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from quotatop.collectors.model import Snapshot
from quotatop.collectors.timeline_base import IncidentMark, TimelineBase
from quotatop.recording.store import Recording, RecordingError

__all__ = ["IncidentMark", "ReplaySource"]

MIN_SPEED, MAX_SPEED = 1.0, 1000.0


class ReplaySource(TimelineBase):
    def __init__(self, path: str | Path | Recording, *, speed: float = 1.0,
                 paused: bool = False, clock: Callable[[], float] = time.monotonic,
                 incidents_max_frames: int = 2000) -> None:
        _check_speed(speed)  # a bad speed fails before the file is opened
        self.recording = path if isinstance(path, Recording) else Recording(path)
        if len(self.recording) == 0:
            self.recording.close()
            raise RecordingError(f"{self.recording.path}: recording has no frames")
        meta = self.recording.meta
        self.name = f"replay:{meta.get('source') or '?'}:{Path(self.recording.path).name}"
        self._clock = clock
        self._speed = _clamp(speed)
        self._paused = paused
        self._index = 0
        self._t = self.recording.times[0]  # playback position in recording time
        self._last_wall: float | None = None
        self._marks: list[IncidentMark] | None = None
        self._incidents_max_frames = incidents_max_frames

    # ---- TimelineControl -----------------------------------------------------------
    @property
    def frames(self) -> int:
        return len(self.recording)

    @property
    def position(self) -> int:
        return self._index

    def time_at(self, index: int) -> float:
        return self.recording.times[index]

    def play(self) -> None:
        if self._index >= self.frames - 1:  # at the end: play from the start again
            self._goto(0)
        self._paused = False
        self._last_wall = self._clock()

    def step(self, frames: int = 1) -> None:
        self._paused = True
        self._goto(min(max(self._index + frames, 0), self.frames - 1))

    def seek(self, t: float) -> None:
        self._index = self.recording.index_at(t)
        self._t = max(t, self.start_time)
        self._last_wall = self._clock()

    def set_speed(self, speed: float) -> None:
        self._advance()  # time so far counts at the old speed
        self._speed = _clamp(speed)

    def incident_marks(self) -> list[IncidentMark]:
        if self._marks is None:
            self._marks = [
                IncidentMark(at=i.opened_at, title=f"{i.kind}: {i.summary}",
                             severity=i.severity)
                for i in self.incidents()]
        return self._marks

    # ---- Collector -----------------------------------------------------------------
    def collect(self) -> Snapshot:
        self._advance()
        snap = self.recording.frame(self._index)
        snap.meta = {**snap.meta, "replay_frame": str(self._index + 1),
                     "replay_frames": str(self.frames)}
        return snap

    def close(self) -> None:
        self.recording.close()

    # ---- helpers -------------------------------------------------------------------
    def incidents(self) -> list:  # type: ignore[type-arg]
        """Incidents over the recording (sampled evenly when it is long)."""
        from quotatop.incidents import detect_incidents

        n = self.frames
        every = max(1, n // self._incidents_max_frames)
        return detect_incidents(self._readable_frames(range(0, n, every)))

    def _readable_frames(self, indices: range) -> Iterator[Snapshot]:
        """The frames at ``indices`` that read: a damaged frame is skipped, so the
        incident marks cover the rest (the frame itself shows its error when reached)."""
        for i in indices:
            try:
                yield self.recording.frame(i)
            except RecordingError:
                continue

    def _goto(self, index: int) -> None:
        self._index = index
        self._t = self.recording.times[index]
        self._last_wall = self._clock()

    def _advance(self) -> None:
        now = self._clock()
        if self._paused or self._last_wall is None:
            self._last_wall = now
            return
        self._t += (now - self._last_wall) * self._speed
        self._last_wall = now
        self._index = max(self._index,
                          bisect.bisect_right(self.recording.times, self._t) - 1)
        if self._index >= self.frames - 1:
            self._index = self.frames - 1
            self._paused = True  # the end of the tape


def _check_speed(speed: float) -> float:
    """``speed`` itself when replay plays at it; ValueError naming the range otherwise."""
    if isinstance(speed, bool) or not MIN_SPEED <= float(speed) <= MAX_SPEED:
        raise ValueError(f"replay speed must be from ×{MIN_SPEED:g} to ×{MAX_SPEED:g}, "
                         f"not {speed!r}")
    return float(speed)


def _clamp(speed: float) -> float:
    """A positive finite speed brought into range (a speed key pressed past the end
    stays at the end); NaN, infinite, zero or negative is a ValueError: such a speed
    would move the playhead nowhere, back, or to NaN."""
    value = float(speed)
    if isinstance(speed, bool) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"replay speed must be a positive number, not {speed!r}")
    return min(max(value, MIN_SPEED), MAX_SPEED)
