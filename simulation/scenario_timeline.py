"""The bundled demo scenario driven like a replay, so the Timeline screen (and
space to pause) work without a recording: one frame per scenario step, one
step per refresh at ×1, `speed` steps per refresh above that. Frame times and
incident marks come from the source: step numbers and none for the fifo seed,
simulated instants and the detectors' incidents for a v2 scenario.

A viewer gets it through the Collector protocol's ``as_timeline`` capability
(quotatop.collectors.base.driven_as_timeline), never by naming the scenario source."""

from __future__ import annotations

from typing import Protocol

from quotatop.collectors.model import Snapshot
from quotatop.collectors.timeline_base import IncidentMark, TimelineBase


class Steps(Protocol):
    """What the timeline drives: a ScenarioSource, which makes its timeline
    (``ScenarioSource.as_timeline``); named by shape, so that this module does not
    import the one that imports it."""

    name: str
    loop: bool
    position: int

    @property
    def total_steps(self) -> int: ...
    def time_at(self, index: int) -> float: ...
    def index_at(self, t: float) -> int: ...
    def incident_marks(self) -> list[IncidentMark]: ...
    def collect(self) -> Snapshot: ...
    def snapshot_at(self, index: int) -> Snapshot: ...
    def close(self) -> None: ...


class ScenarioTimeline(TimelineBase):
    def __init__(self, source: Steps) -> None:
        self.source = source
        self.name = source.name
        self._paused = False
        self._speed = 1.0

    # TimelineControl
    @property
    def frames(self) -> int:
        return self.source.total_steps

    @property
    def position(self) -> int:
        return max(0, self.source.position)

    def time_at(self, index: int) -> float:
        return self.source.time_at(index)

    def play(self) -> None:
        self._paused = False

    def step(self, frames: int = 1) -> None:
        self._paused = True
        self._goto(self.position + frames)

    def seek(self, t: float) -> None:
        self._goto(self.source.index_at(t))

    def set_speed(self, speed: float) -> None:
        self._speed = max(1.0, speed)

    def incident_marks(self) -> list[IncidentMark]:
        # The scenario's own detector run over the whole play.
        return self.source.incident_marks()

    def _goto(self, index: int) -> None:
        self.source.position = min(max(0, index), self.frames - 1)

    # Collector
    def collect(self) -> Snapshot:
        if not self._paused:
            for _ in range(int(self._speed)):
                self.source.collect()
                if not self.source.loop and self.source.position == self.frames - 1:
                    break
        return self.source.snapshot_at(self.source.position)

    def close(self) -> None:
        self.source.close()
