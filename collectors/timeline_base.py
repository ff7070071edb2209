"""What every replay shares for ``quotatop.collectors.base.TimelineControl``.

The protocol is the Collector protocol's optional capability (collectors/base.py); the
mark type and the state every replay keeps the same way live here, and the TUI
re-exports them. A replay subclasses ``TimelineBase``, supplies
``frames``, ``position`` and ``time_at``, and keeps ``_paused`` and ``_speed``;
play, step, seek and speed differ per source and stay with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IncidentMark:
    at: float  # when it opened
    title: str
    severity: str = "warning"  # info | warning | critical


class TimelineBase:
    _paused: bool = False
    _speed: float = 1.0

    @property
    def frames(self) -> int:
        raise NotImplementedError

    @property
    def position(self) -> int:
        raise NotImplementedError

    def time_at(self, index: int) -> float:
        raise NotImplementedError

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def start_time(self) -> float:
        return self.time_at(0)

    @property
    def end_time(self) -> float:
        return self.time_at(max(0, self.frames - 1))

    def pause(self) -> None:
        self._paused = True
