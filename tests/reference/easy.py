"""Textbook EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001), as small and
obvious as it can be, to hold the core's EASY against: one pool of identical
processors, jobs in FCFS order.

At every arrival and completion: start jobs from the head of the queue while they
fit. For the first job that does not (the head), the shadow time is when enough
processors will be free for it, counting running jobs' ends by their estimates, and
``extra`` is what is free at that time beyond its need. A later job starts now if it
fits in what is free and either ends (by its estimate) by the shadow time or uses no
more than ``extra`` (which it then uses up). Nothing else is held back."""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    id: str
    submit: float
    runtime: float  # actual
    estimate: float  # what the scheduler plans with (>= runtime here)
    procs: int


def easy(jobs: list[Job], processors: int) -> dict[str, float]:
    """Start time of every job (all must fit the pool)."""
    arrivals = sorted(jobs, key=lambda j: (j.submit, j.id))
    ends: list[tuple[float, str]] = []  # (actual end, id)
    running: dict[str, tuple[float, int]] = {}  # id -> (estimated end, procs)
    queue: list[Job] = []
    free = processors
    start: dict[str, float] = {}
    i = 0
    while i < len(arrivals) or ends:
        t = min(arrivals[i].submit if i < len(arrivals) else float("inf"),
                ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] <= t:
            _, jid = heapq.heappop(ends)
            free += running.pop(jid)[1]
        while i < len(arrivals) and arrivals[i].submit <= t:
            queue.append(arrivals[i])
            i += 1

        def run(j: Job, t: float = t) -> None:
            nonlocal free
            free -= j.procs
            start[j.id] = t
            running[j.id] = (t + j.estimate, j.procs)
            heapq.heappush(ends, (t + j.runtime, j.id))

        while queue and queue[0].procs <= free:
            run(queue.pop(0))
        if not queue:
            continue
        head = queue[0]
        avail, shadow = free, t
        for est_end, procs in sorted(running.values()):
            if avail >= head.procs:
                break
            avail += procs
            shadow = est_end
        extra = avail - head.procs
        for j in list(queue[1:]):
            if j.procs > free:
                continue
            if t + j.estimate <= shadow:
                queue.remove(j)
                run(j)
            elif j.procs <= extra:
                queue.remove(j)
                extra -= j.procs
                run(j)
    return start
