"""Job runs rebuilt from a sequence of snapshots (a recording's frames, a simulated
scenario), for the report: a snapshot shows what runs *now*, so a run starts when a
frame first shows the job active and ends when one first shows it not.

Times: a job's own ``start_time``/``end_time`` win where the source gives them (Slurm
and the demo do); otherwise the frame's time, so a run's end is known to within one
poll interval (the first frame that no longer shows it). No I/O: ``feed`` one
snapshot at a time, then ``finish``.
"""

from __future__ import annotations

from msgspec import Struct

from quotatop.collectors.model import (
    ACTIVE_STATES,
    PENDING,
    PREEMPTED,
    TERMINAL_STATES,
    Job,
    Snapshot,
    Team,
)
from quotatop.review.report import JobRecord


class _Open(Struct, kw_only=True):
    job: Job
    submit: float
    start: float | None = None  # the open run's start; None: not running now
    alloc: dict[str, float] = {}
    nodes: list[str] = []
    done: bool = False  # ended for good (a terminal state or gone)
    last_end: float | None = None  # the end of its last closed run


def _alloc(job: Job, gpu_types: dict[str, str | None]) -> dict[str, float]:
    """The job's resources, its GPUs typed by its nodes when the request says only
    ``gpu`` and every node it runs on has the same GPU type."""
    alloc = dict(job.request)
    if alloc.get("gpu", 0) > 0 and not any(k.startswith("gpu:") for k in alloc):
        kinds = {gpu_types.get(n) for n in job.nodes}
        if len(kinds) == 1 and (kind := next(iter(kinds))):
            alloc[f"gpu:{kind}"] = alloc["gpu"]
    return alloc


class History:
    """Runs of every job seen in the frames fed, and the teams the frames named."""

    def __init__(self) -> None:
        self.records: list[JobRecord] = []
        self.jobs: dict[str, _Open] = {}
        self.teams: dict[str, Team] = {}
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.source = ""
        self.cluster = ""

    def _close(self, o: _Open, end: float, state: str, preempted: bool) -> None:
        assert o.start is not None
        j = o.job
        self.records.append(JobRecord(
            job_id=j.id, team=j.team, user=j.user, partition=j.partition, qos=j.qos,
            state=state, submit=o.submit, start=o.start, end=max(end, o.start),
            alloc=o.alloc, nodes=o.nodes, preempted=preempted))
        o.start, o.last_end = None, max(end, o.start)

    def feed(self, snap: Snapshot) -> None:
        t = snap.taken_at
        if self.first_t is None:
            self.first_t = t
        self.last_t = t
        self.source, self.cluster = snap.source, snap.cluster
        for team in snap.teams:  # the latest definition of each team wins
            self.teams[team.name] = team
        gpu_types = {n.name: n.gpu_type for n in snap.nodes}
        here: set[str] = set()
        for j in snap.jobs:
            here.add(j.id)
            o = self.jobs.get(j.id)
            if o is None:
                o = self.jobs[j.id] = _Open(job=j, submit=j.submit_time or t)
            elif o.done and j.state not in TERMINAL_STATES:
                o.done = False  # back again (requeued after we took it as gone)
            o.job = j
            if j.state in ACTIVE_STATES:
                if o.start is None:
                    # A new run: the job's own start if it is this run's, else now.
                    s = j.start_time
                    fresh = s is not None and s <= t and (o.last_end is None or s >= o.last_end)
                    o.start = s if fresh else t
                    o.alloc, o.nodes = _alloc(j, gpu_types), list(j.nodes)
            elif j.state == PENDING:
                if o.start is not None:  # running → pending: requeued, i.e. preempted
                    self._close(o, t, PREEMPTED, True)
            elif j.state in TERMINAL_STATES and not o.done:
                end = j.end_time if j.end_time is not None else t
                if o.start is None and j.start_time is not None and j.end_time is not None:
                    # It started and ended between two frames (or before the first).
                    o.start = j.start_time
                    o.alloc, o.nodes = _alloc(j, gpu_types), list(j.nodes)
                if o.start is not None:
                    self._close(o, end, j.state, j.state == PREEMPTED)
                o.done = True
        for job_id, o in self.jobs.items():
            if job_id in here or o.done:
                continue
            # Gone from the frame: it ended (or was cancelled pending) by now.
            if o.start is not None:
                end = o.job.end_time if o.job.end_time is not None else t
                self._close(o, end, "completed", False)
            o.done = True

    def finish(self) -> list[JobRecord]:
        """Every run: the closed ones and those still going (end None) or never started
        (start None, still pending at the last frame)."""
        out = list(self.records)
        for o in self.jobs.values():
            j = o.job
            if o.done:
                if o.last_end is None:
                    # Ended without ever running (cancelled pending): no usage, no wait.
                    out.append(JobRecord(job_id=j.id, team=j.team, user=j.user,
                                         partition=j.partition, qos=j.qos, state=j.state,
                                         submit=o.submit, end=self.last_t))
                continue
            out.append(JobRecord(
                job_id=j.id, team=j.team, user=j.user, partition=j.partition, qos=j.qos,
                state=j.state, submit=o.submit, start=o.start, end=None, alloc=o.alloc,
                nodes=o.nodes))
        return out
