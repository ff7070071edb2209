"""Queue storm: one team submits a flood of jobs and the others wait behind it."""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque

from collectors.model import PENDING, Snapshot
from quotatop.incidents.config import QueueStormConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import QUEUE_STORM, Incident


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
        self.seen: set[str] = set()
        self.recent: deque[tuple[float, str]] = deque()  # (submit time, team)
        self.episodes = Episodes()
        self.first = True
        self.depth_before: dict[str, int] = {}
        self.waits_at_open: dict[str, dict[str, float]] = {}

    def feed(self, snap: Snapshot) -> None:
        t, cfg = snap.taken_at, self.cfg
        for j in snap.jobs:
            if j.id in self.seen:
                continue
            self.seen.add(j.id)
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
            victims = self._victims(team, waits)
            cap = max(2 * before, math.ceil(cfg.min_jobs / 2 / 50) * 50)
            active[team] = Incident(
                kind=QUEUE_STORM, opened_at=t, teams=[team, *victims],
                jobs=[j.id for j in snap.jobs if j.team == team and j.state == PENDING][:20],
                summary=f"{team} submitted {n} jobs in {cfg.window / 60:g} min "
                        f"(queue {before} → {depth[team]})"
                        + (f"; {', '.join(victims)} wait longer behind it" if victims else ""),
                suggestion=f"limit {team} with MaxSubmitJobs={cap} "
                           f"(sacctmgr modify account {team} set MaxSubmitJobs={cap})",
                details={"submitted_in_window": float(n), "queue_depth": float(depth[team]),
                         "queue_depth_before": float(before)})
        for team in depth:
            if team not in active:
                self.depth_before[team] = depth[team]
        self.episodes.update(t, active)

    def _victims(self, team: str, waits: dict[str, float]) -> list[str]:
        base = self.waits_at_open.get(team, {})
        out = []
        for other, w in waits.items():
            if other == team:
                continue
            w0 = base.get(other, 0.0)
            if w > 0 and w >= self.cfg.victim_wait_growth * max(w0, 1.0):
                out.append(other)
        return sorted(out)

    def finish(self) -> list[Incident]:
        return self.episodes.finish()
