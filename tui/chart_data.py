"""What the charts plot, kept by the app from the frames it has shown: one small
``Sample`` per frame (team usage, queue depth, cluster use), bounded in count, and
the predicted wait per team from the current predictions. No Textual here.

Samples are keyed by the frame's own time, so a replay that seeks back replaces
the frame it shows again instead of drawing time backwards."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from quotatop.collectors.model import PENDING, Series, Snapshot
from quotatop.tui.derive import Derived
from quotatop.tui.predictions import Predictions

KEEP = 720  # samples: 24 min at 2 s refresh, a whole bundled scenario; ~200 KB


@dataclass(frozen=True)
class Sample:
    at: float  # the frame's time (a replay's own clock), seconds
    used: dict[str, float]  # per team, in the unit
    pending_jobs: int
    queued: float  # what the pending jobs ask for, in the unit
    cluster_used: float
    cluster_total: float | None  # None: the source has no node inventory

    @property
    def utilization(self) -> float | None:
        return self.cluster_used / self.cluster_total if self.cluster_total else None


def sample_of(derived: Derived, at: float) -> Sample:
    # Each job counts in its own team's row only, so the rows add up to the queue.
    return Sample(at=at, used={r.name: r.used for r in derived.teams},
                  pending_jobs=sum(r.pending for r in derived.teams),
                  queued=sum(r.queued for r in derived.teams),
                  cluster_used=derived.meter.used, cluster_total=derived.meter.total)


class ChartHistory:
    """The last ``keep`` samples, one per frame time, oldest first."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._by_time: dict[float, Sample] = {}  # insertion order: the oldest arrival first

    def __len__(self) -> int:
        return len(self._by_time)

    def add(self, sample: Sample) -> None:
        self._by_time.pop(sample.at, None)
        self._by_time[sample.at] = sample
        while len(self._by_time) > self.keep:
            del self._by_time[next(iter(self._by_time))]

    def samples(self, start: float | None = None, end: float | None = None) -> list[Sample]:
        """In time order, within [start, end] when given."""
        return sorted((s for s in self._by_time.values()
                       if (start is None or s.at >= start) and (end is None or s.at <= end)),
                      key=lambda s: s.at)


Points = dict[str, list[tuple[float, float]]]  # per team: (time, usage) in time order


def team_points(samples: list[Sample], series: list[Series], names: list[str]) -> Points:
    """Per team: the source's own usage series where it has one (Prometheus keeps
    hours of it, so the chart is full from the first frame), else the frames the
    app has shown."""
    out: Points = {}
    for s in series:
        team = s.labels.get("team")
        if team in names and s.points:
            out[team] = sorted(s.points)
    for name in names:
        if name not in out:
            out[name] = [(s.at, s.used[name]) for s in samples if name in s.used]
    return out


def usage_top(points: Points, limits: list[float | None]) -> float:
    """One scale for every team's chart: the highest usage seen or limit shown."""
    seen = [v for pts in points.values() for _, v in pts]
    return max([1.0, *seen, *(x for x in limits if x is not None)])


def team_waits(snap: Snapshot, preds: Predictions, now: float) -> dict[str, float]:
    """Per team with pending jobs the core (or the source) gives a start for: the
    median predicted wait from ``now``, seconds. One pass over the jobs."""
    waits: dict[str, list[float]] = {}
    for j in snap.jobs:
        if j.state != PENDING:
            continue
        start = preds.start(j)
        if start is not None:
            waits.setdefault(j.team, []).append(max(0.0, start - now))
    return {team: statistics.median(w) for team, w in waits.items()}
