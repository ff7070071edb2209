"""Queue storm: one team submits a flood of jobs and the others wait behind it."""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import PENDING, Snapshot
from quotatop.incidents.config import QueueStormConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import QUEUE_STORM, Incident

_GROWTH = "peak_wait_growth:"  # details key prefix, then the other team's name


def _median_waits(snap: Snapshot) -> dict[str, float]:
    waits: dict[str, list[float]] = {}
    for j in snap.jobs:
        if j.state == PENDING:
            waits.setdefault(j.team, []).append(max(0.0, snap.taken_at - j.submit_time))
    return {t: statistics.median(w) for t, w in waits.items()}


class QueueStormDetector:
    kind = QUEUE_STORM

    def __init__(self, config: QueueStormConfig) -> None:
        self.cfg = config
        # Job id → its submit time: an id seen again with another submit time is a
        # new job (a Kubernetes name reused, the looping demo's next pass).
        self.seen: dict[str, float] = {}
        self.recent: deque[tuple[float, str]] = deque()  # (submit time, team)
        self.episodes = Episodes()
        self.first = True
        self.depth_before: dict[str, int] = {}
        self.waits_at_open: dict[str, dict[str, float]] = {}

    def feed(self, snap: Snapshot) -> None:
        t, cfg = snap.taken_at, self.cfg
        for j in snap.jobs:
            if self.seen.get(j.id) == j.submit_time:
                continue
            self.seen[j.id] = j.submit_time
            at = j.submit_time or t
            # A recording starts mid-life: its first jobs count only if freshly submitted.
            if not self.first or at > t - cfg.window:
                self.recent.append((at, j.team))
        self.first = False
        while self.recent and self.recent[0][0] <= t - cfg.window:
            self.recent.popleft()
        per_team = Counter(team for _, team in self.recent)
        total = sum(per_team.values())
        depth = Counter(j.team for j in snap.jobs if j.state == PENDING)
        waits = _median_waits(snap)
        active: dict[object, Incident] = {}
        for team in sorted(set(per_team) | {str(k) for k in self.episodes.open}):
            n = per_team[team]
            storming = n >= cfg.min_jobs and n >= cfg.min_share * total
            # A flood that starts at once harms no one: it is a storm while it queues.
            if not (storming or team in self.episodes.open) or depth[team] < cfg.min_jobs / 2:
                continue
            if team not in self.episodes.open:
                self.waits_at_open[team] = waits
            before = self.depth_before.get(team, 0)
            growth = self._growth(team, waits)
            active[team] = self._incident(t, team, n, depth[team], before, growth, snap)
        for team in set(depth) | set(self.depth_before):  # a drained queue is 0, not stale
            if team not in active:
                self.depth_before[team] = depth[team]
        self.episodes.update(t, active)

    def _growth(self, team: str, waits: dict[str, float]) -> dict[str, float]:
        """Other teams' median wait now, as a multiple of it when the storm opened."""
        base = self.waits_at_open.get(team, {})
        return {other: w / max(base.get(other, 0.0), 1.0)
                for other, w in waits.items() if other != team and w > 0}

    def _incident(self, t: float, team: str, n: int, depth: int, before: int,
                  growth: dict[str, float], snap: Snapshot) -> Incident:
        # A storm's summary is read after it closed, when the last frame shows a
        # drained queue: it keeps the worst values of the whole episode.
        cur = self.episodes.open.get(team)
        old = cur.details if cur is not None else {}
        peak_n = max(n, int(old.get("peak_submitted_in_window", 0)))
        peak_depth = max(depth, int(old.get("peak_queue_depth", 0)))
        peak_growth = {k[len(_GROWTH):]: float(v) for k, v in old.items()
                       if k.startswith(_GROWTH)}
        for other, g in growth.items():
            peak_growth[other] = max(g, peak_growth.get(other, 0.0))
        victims = sorted(o for o, g in peak_growth.items() if g >= self.cfg.victim_wait_growth)
        # Room for the team's usual queue (twice its depth before the storm, frozen
        # while the storm is open), stated beside the peak it would have stopped.
        cap = max(2 * before, math.ceil(self.cfg.min_jobs / 2 / 50) * 50)
        worse = ", ".join(f"{v} ×{peak_growth[v]:.1f}" for v in victims)
        details: dict[str, float | str] = {
            "peak_submitted_in_window": float(peak_n), "peak_queue_depth": float(peak_depth),
            "queue_depth_before": float(before), "submitted_in_window": float(n),
            "queue_depth": float(depth)}
        if cur is None or peak_n > old.get("peak_submitted_in_window", 0) \
                or peak_depth > old.get("peak_queue_depth", 0):
            details["peak_at"] = t
        details.update({f"{_GROWTH}{o}": g for o, g in peak_growth.items()})
        return Incident(
            kind=QUEUE_STORM, opened_at=t, teams=[team, *victims],
            jobs=[j.id for j in snap.jobs if j.team == team and j.state == PENDING][:20],
            summary=f"{team} submitted {peak_n} jobs in {human_duration(self.cfg.window)} at peak "
                    f"(queue {before} → {peak_depth} at peak)"
                    + (f"; {worse} longer waits behind it (peak median wait growth)"
                       if victims else ""),
            suggestion=f"limit {team} with MaxSubmitJobs={cap} (its queue peaked at "
                       f"{peak_depth}; sacctmgr modify account {team} set MaxSubmitJobs={cap})",
            details=details)

    def finish(self) -> list[Incident]:
        return self.episodes.finish()
