"""Starvation: a job pending far beyond its peers while newer or lower-priority
jobs keep starting past it."""

from __future__ import annotations

import statistics
from collections import deque

from msgspec import Struct

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import PENDING, RUNNING, Job, Snapshot
from quotatop.incidents.config import StarvationConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import STARVATION, Incident


def queued_since(job: Job) -> float:
    """When the job last became eligible to start. A requeued (preempted) job's
    wait restarts at its requeue, as Slurm resets its EligibleTime and sacct
    counts queue wait from eligibility; without this, a job that ran and was
    preempted by a team reclaiming its guarantee would read as starving."""
    return max(job.submit_time, job.eligible_time or job.submit_time)


class _Start(Struct, frozen=True):
    at: float
    job: str
    team: str
    submit: float
    priority: float | None

    @property
    def wait(self) -> float:
        return max(0.0, self.at - self.submit)


class StarvationDetector:
    kind = STARVATION

    def __init__(self, config: StarvationConfig) -> None:
        self.cfg = config
        self.pending_priority: dict[str, float | None] = {}  # last priority seen pending
        self.starts: deque[_Start] = deque()
        self.prev_t: float | None = None
        self.episodes = Episodes()

    def feed(self, snap: Snapshot) -> None:
        t, cfg = snap.taken_at, self.cfg
        for j in snap.jobs:
            if j.state == RUNNING and (
                    j.id in self.pending_priority
                    or (self.prev_t is not None and (j.start_time or 0) > self.prev_t)):
                self.starts.append(_Start(at=j.start_time or t, job=j.id, team=j.team,
                                          submit=queued_since(j),
                                          priority=self.pending_priority.pop(j.id, j.priority)))
        self.pending_priority = {j.id: j.priority for j in snap.jobs if j.state == PENDING}
        self.prev_t = t
        while self.starts and self.starts[0].at < t - cfg.window:
            self.starts.popleft()
        active: dict[object, Incident] = {}
        if self.starts:
            peer_wait = statistics.median(s.wait for s in self.starts)
            for j in snap.jobs:
                if j.state != PENDING:
                    continue
                since = queued_since(j)
                wait = t - since
                if wait < cfg.min_wait or wait < cfg.wait_factor * max(peer_wait, 1.0):
                    continue
                passed = [s for s in self.starts if s.submit > since or (
                    j.priority is not None and s.priority is not None
                    and s.priority < j.priority)]
                if len(passed) < cfg.min_bypassed:
                    continue
                active[j.id] = self._incident(snap, j, wait, peer_wait, passed)
        self.episodes.update(t, active)

    def _incident(self, snap: Snapshot, job, wait: float, peer_wait: float,
                  passed: list[_Start]) -> Incident:
        details: dict[str, float | str] = {"wait": wait, "peer_median_wait": peer_wait,
                                           "passed_by": float(len(passed))}
        # Aging that rescues it: enough priority per hour of age to outrank every
        # newer job that started with a higher priority.
        now = 0.0
        for s in passed:
            since = queued_since(job)
            if job.priority is None or s.priority is None or s.submit <= since:
                continue
            gap = s.priority - job.priority
            if gap > 0:
                now = max(now, gap / ((s.submit - since) / 3600.0))
        # The passers of the trailing window change as the episode goes on; the
        # rescue must outrank all of them, so it reports the episode's worst.
        cur = self.episodes.open.get(job.id)
        old = cur.details if cur is not None else {}
        worst = float(old.get("age_priority_per_hour_needed", 0.0))
        if now > 0 and cur is None:
            details["age_priority_per_hour_needed_at_open"] = now
        if now > worst:  # when the worst was measured
            details["age_priority_per_hour_needed_at"] = snap.taken_at
        need = max(now, worst)
        if need > 0:
            details["age_priority_per_hour_needed"] = need
            details["age_priority_per_hour_needed_now"] = now
            suggestion = (f"aging of ≥ {need:.0f} priority points per hour waited (the most "
                          "this episode needed) would have put "
                          f"job {job.id} ahead of the newer jobs that passed it "
                          "(raise PriorityWeightAge / lower PriorityMaxAge)")
        else:
            suggestion = (f"jobs newer than {job.id} started first; an age factor "
                          "(PriorityWeightAge) or a reservation for it would rescue it")
        teams = [job.team, *sorted({s.team for s in passed} - {job.team})]
        return Incident(
            kind=STARVATION, opened_at=snap.taken_at, teams=teams,
            jobs=[job.id, *[s.job for s in passed[-10:]]],
            summary=f"job {job.id} ({job.team}) pending {human_duration(wait)}, "
                    f"{wait / max(peer_wait, 1.0):.0f}× its peers' median wait, while "
                    f"{len(passed)} newer or lower-priority jobs started",
            suggestion=suggestion, details=details)

    def finish(self) -> list[Incident]:
        return self.episodes.finish()
