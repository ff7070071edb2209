"""Incidents detected live, one snapshot at a time, in the collect worker.

Wraps ``incidents.IncidentMonitor``: after each snapshot, the open
incidents and the ones that closed this session (for the Incidents screen and
the Timeline marks). A replay or the demo seeking backwards restarts the
monitor from that frame: detectors assume time moves forward.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quotatop.collectors.model import Snapshot
from quotatop.incidents import Incident, IncidentConfig, IncidentMonitor

KEEP_CLOSED = 200  # closed incidents kept for the list and the timeline


@dataclass(frozen=True)
class IncidentState:
    open: list[Incident] = field(default_factory=list)
    closed: list[Incident] = field(default_factory=list)  # newest last
    error: str | None = None


class LiveIncidents:
    def __init__(self, config: IncidentConfig | None = None) -> None:
        self.config = config
        self.monitor = IncidentMonitor(config)
        self._open: list[Incident] = []
        self._closed: list[Incident] = []
        self._last_t: float | None = None

    def feed(self, snap: Snapshot) -> IncidentState:
        if self._last_t is not None and snap.taken_at < self._last_t:
            self.monitor = IncidentMonitor(self.config)
            self._open, self._closed = [], []
        self._last_t = snap.taken_at
        try:
            self.monitor.feed(snap)
            now_open = self.monitor.open_incidents()
            self.monitor.forget_closed()  # they close below, into self._closed (bounded)
        except Exception as e:  # a detector bug must not stop the data on screen
            return IncidentState(self._open, list(self._closed),
                                 error=f"incident detection failed: {type(e).__name__}: {e}")
        still = {id(i) for i in now_open}
        for inc in self._open:
            if id(inc) not in still:  # Episodes set its closed_at when it closed
                if inc.closed_at is None:
                    inc.closed_at = snap.taken_at
                self._closed.append(inc)
        del self._closed[:-KEEP_CLOSED]
        self._open = now_open
        return IncidentState(list(now_open), list(self._closed))
