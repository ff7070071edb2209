"""Incident detectors over a sequence of snapshots (a recording or a simulation).

``detect_incidents(snapshots, config)`` runs every detector and returns the
incidents sorted by opening time; ``IncidentMonitor`` does the same one
snapshot at a time, for a live source.

Its floor (docs/architecture.md) is just above the snapshot model: pure functions of
snapshots, called by the sources that replay (recording/, simulation/) and by the TUI.
"""

from __future__ import annotations

from collections.abc import Iterable

from quotatop.collectors.model import Snapshot
from quotatop.incidents.config import IncidentConfig
from quotatop.incidents.fragmentation import FragmentationDetector
from quotatop.incidents.idle_gpus import IdleGpusDetector
from quotatop.incidents.model import KINDS, Incident
from quotatop.incidents.overcommit import OvercommitDetector
from quotatop.incidents.queue_storm import QueueStormDetector
from quotatop.incidents.starvation import StarvationDetector

__all__ = ["KINDS", "Incident", "IncidentConfig", "IncidentMonitor", "detect_incidents"]


class IncidentMonitor:
    """Feeds every detector. Detectors assume time moves forward: a frame older
    than the last one (a replay seeking back, a clock stepped back) starts them
    afresh from that frame, so nothing reopens from stale state. Incidents seen
    before the jump are kept for ``finish``, closed at the last frame before it."""

    def __init__(self, config: IncidentConfig | None = None) -> None:
        self.config = config or IncidentConfig()
        self.detectors = self._fresh()
        self.last_t: float | None = None
        self.before_jump: list[Incident] = []  # finished by a backwards jump
        self.resets = 0

    def _fresh(self) -> list:  # type: ignore[type-arg]
        cfg = self.config
        return [QueueStormDetector(cfg.queue_storm), StarvationDetector(cfg.starvation),
                OvercommitDetector(cfg.overcommit), FragmentationDetector(cfg.fragmentation),
                IdleGpusDetector(cfg.idle_gpus)]

    def feed(self, snap: Snapshot) -> None:
        if self.last_t is not None and snap.taken_at < self.last_t:
            for inc in self._finish_detectors():
                if inc.closed_at is None:
                    inc.closed_at = self.last_t
                self.before_jump.append(inc)
            self.detectors = self._fresh()
            self.resets += 1
        self.last_t = snap.taken_at
        for d in self.detectors:
            d.feed(snap)

    def open_incidents(self) -> list[Incident]:
        out = [i for d in self.detectors
               for ep in _episodes(d) for i in ep.open.values()]
        return sorted(out, key=lambda i: i.opened_at)

    def forget_closed(self) -> None:
        """Drop the closed incidents kept for ``finish``. A live viewer never calls
        ``finish``: it keeps the ones it shows itself (tui/live_incidents.py, at most
        KEEP_CLOSED), and kept here as well they grew without end: a looping demo's
        per-job starvation incidents, thousands per pass of an 8,000-job scenario."""
        for d in self.detectors:
            for ep in _episodes(d):
                ep.done.clear()
        self.before_jump.clear()

    def finish(self) -> list[Incident]:
        out = self.before_jump + self._finish_detectors()
        self.before_jump = []
        return sorted(out, key=lambda i: (i.opened_at, i.kind))

    def _finish_detectors(self) -> list[Incident]:
        return [i for d in self.detectors for i in d.finish()]


def _episodes(d: object) -> list:  # type: ignore[type-arg]
    return [v for v in vars(d).values() if hasattr(v, "open") and hasattr(v, "done")]


def detect_incidents(snapshots: Iterable[Snapshot],
                     config: IncidentConfig | None = None) -> list[Incident]:
    mon = IncidentMonitor(config)
    for snap in snapshots:
        mon.feed(snap)
    return mon.finish()
