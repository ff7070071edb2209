"""A v2 (multifactor) scenario as a sequence of snapshots.

The core's ``simulate`` runs the whole scenario once; its event stream is then
swept to rebuild, at each frame time, what a live cluster would show: nodes
with their allocations, teams with usage and borrowed, running jobs with their
nodes and start times, pending jobs. A pending job's priority and reason come
from the core's ``predict`` on that frame (the same engine, asked at that
moment), computed when the frame is first shown.
"""

from __future__ import annotations

import array
import bisect
import math
from collections import OrderedDict
from typing import NamedTuple

import msgspec

from quotatop import scheduler_core
from quotatop.collectors.model import (
    PENDING,
    RUNNING,
    SUSPENDED,
    FairShare,
    Job,
    PriorityFactors,
    Snapshot,
)
from quotatop.simulation.scenario import ScenarioV2

# Scenario second 0 is shown as this instant (Mon 2026-01-05 09:00 UTC), so
# clocks and "earliest at 09:20" reasons read like a working day, deterministically.
EPOCH = 1_767_603_600.0
MAX_GAP_FRAMES = 100  # frames are added so no gap exceeds span / this
# Between two passes of a looping demo. Longer than the detectors' trailing
# windows (1 h by default), so a pass never counts the previous one's jobs.
LOOP_GAP = 3600.0


class ScenarioError(ValueError):
    """The core refused the scenario; the message names the object."""


def frame_times(events: list[float], start: float, end: float) -> list[float]:
    """Every instant something happens, plus a grid so quiet stretches still move."""
    times = {start, end, *events}
    span = end - start
    if span > 0:
        gap = _nice(span / MAX_GAP_FRAMES)
        times.update(start + k * gap for k in range(int(span // gap) + 1))
    return sorted(t for t in times if start <= t <= end)


def _nice(x: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if step >= x:
            return float(step)
    return float(math.ceil(x / 3600) * 3600)


class _Run(msgspec.Struct):
    job: scheduler_core.SimJob
    state: str = ""  # "" before its submit; PENDING, RUNNING, SUSPENDED or gone
    start: float | None = None
    nodes: list[str] = []
    requeued: float | None = None  # last requeue: its wait restarts there
    pos: int = 0  # its index in ScenarioPlayback._jobs


# A job's state in a frame as one byte: index into _STATES.
_STATES = (PENDING, RUNNING, SUSPENDED)
_CODE = {s: i for i, s in enumerate(_STATES)}
_NO_NODES: list[str] = []


class _Frame(NamedTuple):
    """What a frame needs to be built again: its time, the fair-share usage and
    counters then, and the jobs on the cluster as columns (each job once, by its index
    in ``ScenarioPlayback._jobs``), not as snapshots. Holding every frame as a Snapshot
    was the demo's memory: 88 frames of an 8,000-job scenario were 176k Job structs,
    ~130 MB (bench/soak.py --scenario-jobs 8000); as columns they are ~5 MB."""

    t: float
    fs_usage: tuple[float, ...]
    rejected: int
    preemptions: int
    jobs: array.array[int]  # index into ScenarioPlayback._jobs
    states: bytes  # index into _STATES
    starts: array.array[float]  # the running job's start, scenario seconds (else NaN)
    requeued: array.array[float]  # its last requeue (NaN: never requeued)
    nodes: tuple[list[str], ...]  # the running job's nodes (shared lists, never changed)


class ScenarioPlayback:
    # Predicted frames kept: the one on screen and a few around it (stepping back and
    # forth re-predicts nothing). All of them were kept, and a looping demo's memory
    # grew by a full pass of predicted frames (~100 MB at 8,000 jobs) before each wrap.
    PREDICTED_KEPT = 8

    def __init__(self, scenario: ScenarioV2) -> None:
        from quotatop.simulation.simulate import v2_inputs

        self.scenario = scenario
        self.cluster, self.jobs, self.policy = v2_inputs(scenario)
        self._policy_json = msgspec.json.encode(self.policy).decode()
        # Per frame index: the priority (and factors) of each job pending or starting at
        # that frame, as the core gives them; read for the jobs that start there.
        self._start_tables: dict[int, dict[str, tuple[float, PriorityFactors]]] = {}
        try:
            result = scheduler_core.simulate(self.jobs, self.policy, cluster=self.cluster,
                                             start=0.0, until=scenario.until)
        except ValueError as e:
            raise ScenarioError(f"scenario {scenario.scenario.name}: {e}") from None
        ev_times = [e.time for e in result.events]
        end = max(ev_times, default=0.0)
        if scenario.until is not None:
            end = min(end, scenario.until)
        # A preemption gets a frame of its own just before it, at the same instant: the
        # preemptor submitted and pending, its victims still running. That is the moment
        # a live scheduler shows (victims take their grace time to leave) and the one
        # where the core's prediction names whom it will preempt.
        before = {e.time for e in result.events if e.kind == "preempt" and e.time <= end}
        self.times = sorted([*frame_times(ev_times, 0.0, end), *before])
        self.unit = scenario.scenario.unit
        # The simulation's events are swept once into the frames' columns and let go.
        self._team_index = {name: i for i, name in enumerate(result.teams)}
        self._frames = self._sweep(result)
        self._predicted: OrderedDict[int, Snapshot] = OrderedDict()
        self._predicted_offset = 0.0

    def __len__(self) -> int:
        return len(self.times)

    def index_at(self, t: float) -> int:
        """The frame at or before scenario second ``t``."""
        return max(0, min(len(self.times) - 1, bisect.bisect_right(self.times, t) - 1))

    @property
    def period(self) -> float:
        """Scenario seconds from one pass's start to the next's when looping."""
        return (self.times[-1] if self.times else 0.0) + LOOP_GAP

    def frame(self, index: int, offset: float = 0.0) -> Snapshot:
        """Frame ``index`` with every instant moved ``offset`` seconds later (a
        later pass of the loop). Predictions are made on the moved frame, so
        reasons' clock times match it; only the current offset's are kept, and of
        those the last PREDICTED_KEPT asked for."""
        if offset != self._predicted_offset:
            self._predicted, self._predicted_offset = OrderedDict(), offset
        snap = self._predicted.get(index)
        if snap is None:
            snap = self._with_predictions(shifted(self._snapshot(index), offset), offset)
            self._predicted[index] = snap
            while len(self._predicted) > self.PREDICTED_KEPT:
                self._predicted.popitem(last=False)
        else:
            self._predicted.move_to_end(index)
        return msgspec.structs.replace(snap, meta=dict(snap.meta))

    # ------------------------------------------------------------------ sweep

    def _sweep(self, result: scheduler_core.SimResult) -> list[_Frame]:
        runs = {j.id: _Run(job=j) for j in self.jobs}
        # The frames' columns name a job by its position here.
        self._jobs = [r.job for r in runs.values()]
        for k, r in enumerate(runs.values()):
            r.pos = k
        events = result.events
        samples = result.usage
        fs_usage = [0.0] * len(result.teams)
        fs_t, sample_i = 0.0, 0
        cur: list[float] = [0.0] * len(result.teams)
        half_life = self.policy.usage_half_life
        rejected = preempted = 0
        out: list[_Frame] = []
        # The jobs submitted and not gone, in job order (as a frame lists them).
        on: dict[int, _Run] = {}
        e = 0
        for i, t in enumerate(self.times):
            # The first of two frames at one instant stops before its first preemption.
            before = i + 1 < len(self.times) and self.times[i + 1] == t
            while e < len(events) and (events[e].time < t or (events[e].time == t and not (
                    before and events[e].kind == "preempt"))):
                ev = events[e]
                r = runs.get(ev.job_id)
                e += 1
                if r is None:
                    continue
                if ev.kind == "submit":
                    r.state = PENDING
                elif ev.kind == "start":
                    r.state, r.start, r.nodes = RUNNING, ev.time, list(ev.nodes)
                elif ev.kind == "finish":
                    r.state = "gone"
                elif ev.kind == "reject":
                    r.state = "gone"
                    rejected += 1
                elif ev.kind == "preempt":
                    preempted += 1
                    mode = ev.detail or "requeue"
                    r.nodes = []
                    r.state = {"requeue": PENDING, "suspend": SUSPENDED}.get(mode, "gone")
                    r.requeued = ev.time if r.state == PENDING else r.requeued
                if r.state in _CODE:
                    on[r.pos] = r
                else:
                    on.pop(r.pos, None)
            # Fair-share usage decays as the core's does: usage × dt, halved per half-life.
            while sample_i < len(samples) and samples[sample_i].time <= t:
                fs_t = _integrate(fs_usage, cur, fs_t, samples[sample_i].time, half_life)
                cur = samples[sample_i].usage
                sample_i += 1
            fs_t = _integrate(fs_usage, cur, fs_t, t, half_life)
            order = sorted(on)
            runs_on = [on[k] for k in order]
            running = [r.state == RUNNING for r in runs_on]
            out.append(_Frame(
                t=t, fs_usage=tuple(fs_usage), rejected=rejected, preemptions=preempted,
                jobs=array.array("I", order),
                states=bytes(_CODE[r.state] for r in runs_on),
                starts=array.array("d", [r.start if run and r.start is not None else math.nan
                                         for r, run in zip(runs_on, running, strict=True)]),
                requeued=array.array("d", [math.nan if r.requeued is None else r.requeued
                                           for r in runs_on]),
                nodes=tuple(r.nodes if run else _NO_NODES
                            for r, run in zip(runs_on, running, strict=True))))
        return out

    def _snapshot(self, index: int) -> Snapshot:
        """Frame ``index`` built from its columns (before predictions)."""
        f = self._frames[index]
        alloc: dict[str, dict[str, float]] = {}
        usage: dict[str, dict[str, float]] = {}
        jobs: list[Job] = []
        for pos, code, start, requeued, on_nodes in zip(
                f.jobs, f.states, f.starts, f.requeued, f.nodes, strict=True):
            j = self._jobs[pos]
            state = _STATES[code]
            if state == RUNNING:
                tu = usage.setdefault(j.team, {})
                for k, v in j.request.items():
                    tu[k] = tu.get(k, 0.0) + v
                share = 1.0 / max(1, len(on_nodes))
                for n in on_nodes:
                    na = alloc.setdefault(n, {})
                    for k, v in j.request.items():
                        na[k] = na.get(k, 0.0) + v * share
            jobs.append(Job(
                id=j.id, name=j.id, user=j.user, team=j.team, qos=j.qos, state=state,
                request=dict(j.request), nodes_requested=j.nodes_requested,
                time_limit=j.time_limit, submit_time=EPOCH + j.submit_time,
                eligible_time=None if math.isnan(requeued) else EPOCH + requeued,
                start_time=None if math.isnan(start) else EPOCH + start,
                nodes=list(on_nodes) if state == RUNNING else [],
                qos_class=j.qos_class, gang=j.gang, partition=j.partition))

        nodes = []
        for n in self.cluster.nodes:
            a = alloc.get(n.name, {})
            key = "gpu" if "gpu" in n.capacity else "cpu"
            used, cap = a.get(key, 0.0), n.capacity.get(key, 0.0)
            state = "idle" if used <= 0 else "allocated" if used >= cap else "mixed"
            nodes.append(msgspec.structs.replace(n, allocated=a, state=state))
        teams = []
        for tm in self.cluster.teams:
            u = usage.get(tm.name, {})
            borrowed = {k: u.get(k, 0.0) - g for k, g in (tm.guarantee or {}).items()
                        if u.get(k, 0.0) > g}
            notes = [] if tm.guarantee is not None else [
                "scenario team without a guarantee: max only, neither lends nor borrows"]
            k = self._team_index.get(tm.name)
            fs = FairShare(raw_usage=f.fs_usage[k]) if k is not None else None
            teams.append(msgspec.structs.replace(tm, usage=u, borrowed=borrowed,
                                                 fairshare=fs, source_notes=notes))
        info = self.scenario.scenario
        snap = Snapshot(
            cluster=info.cluster, source=f"demo:{info.name}", taken_at=EPOCH + f.t,
            nodes=nodes, teams=teams, qos=list(self.cluster.qos), jobs=jobs,
            meta={"step": str(index + 1), "steps": str(len(self.times)), "time": f"{f.t:g}",
                  "unit": self.unit, "scenario": info.name, "policy": info.policy,
                  "rejected": str(f.rejected), "preemptions": str(f.preemptions),
                  # The demo's scheduler is the core under this exact policy: a view's
                  # own prediction runs under it too, or its Preemption panel would name
                  # other victims than the next frame preempts (tui/predictions.py).
                  "core_policy": self._policy_json})
        if index + 1 < len(self.times) and self.times[index + 1] == f.t:
            snap.meta["moment"] = "before preemption"
        return self._with_fairshare(snap)

    def _with_fairshare(self, snap: Snapshot) -> Snapshot:
        """Each team's fair-share as the core computes it from the decayed usage (what
        ``sshare -l`` shows a live Slurm's): shares, usage and level among its siblings,
        and the factor its jobs get."""
        try:
            rows = {r.team: r for r in scheduler_core.fairshare(snap, self.policy)}
        except ValueError as e:
            return msgspec.structs.replace(snap, warnings=[f"core fairshare: {e}"])
        teams = []
        for tm in snap.teams:
            r = rows.get(tm.name)
            if r is not None:
                tm = msgspec.structs.replace(tm, fairshare=FairShare(
                    raw_shares=r.raw_shares, norm_shares=r.norm_shares,
                    raw_usage=r.raw_usage, effective_usage=r.norm_usage,
                    level_fs=r.level_fs, factor=r.factor))
            teams.append(tm)
        return msgspec.structs.replace(snap, teams=teams)

    def _start_priority(self, start: float) -> dict[str, tuple[float, PriorityFactors]]:
        """The priorities at the frame of scenario second ``start`` (at or before it) of
        the jobs pending or starting there: what a job that starts then started with (a
        job starting at that very instant was pending just before the pass that started
        it, so it is asked for as pending). Kept per frame, so a frame looks the same
        whatever order frames are asked in."""
        k = self.index_at(start)
        table = self._start_tables.get(k)
        if table is None:
            snap = self._snapshot(k)
            asked = [msgspec.structs.replace(j, state=PENDING, nodes=[], start_time=None)
                     if j.state == RUNNING and j.start_time == snap.taken_at else j
                     for j in snap.jobs]
            try:  # priorities are the core's at the snapshot: a horizon of a second will do
                preds = scheduler_core.predict(msgspec.structs.replace(snap, jobs=asked),
                                               self.policy, horizon=1.0)
            except ValueError:
                preds = []
            table = {p.job_id: (p.priority, _factors(p)) for p in preds}
            self._start_tables[k] = table
        return table

    def _with_predictions(self, snap: Snapshot, offset: float = 0.0) -> Snapshot:
        # A running job shows the priority it started with (what squeue keeps showing:
        # Slurm stops recomputing a job's priority once it runs), and the core ranks the
        # victims of a preemption by it, as the simulation did.
        jobs_in = []
        for j in snap.jobs:
            if j.state == RUNNING and j.start_time is not None:
                got = self._start_priority(j.start_time - offset - EPOCH).get(j.id)
                if got is not None:
                    j = msgspec.structs.replace(j, priority=got[0], factors=got[1])
            jobs_in.append(j)
        snap = msgspec.structs.replace(snap, jobs=jobs_in)
        if not any(j.state == PENDING for j in snap.jobs):
            return snap
        try:
            preds = scheduler_core.predict(snap, self.policy, horizon=86400.0)
        except ValueError as e:
            return msgspec.structs.replace(snap, warnings=[f"core predict: {e}"])
        by_id = {p.job_id: p for p in preds}
        jobs = []
        for j in snap.jobs:
            p = by_id.get(j.id)
            if p is not None and j.state == PENDING:
                j = msgspec.structs.replace(j, priority=p.priority, reason=p.reason,
                                            factors=_factors(p))
            jobs.append(j)
        return msgspec.structs.replace(snap, jobs=jobs)


def _factors(p: scheduler_core.Prediction) -> PriorityFactors:
    f = p.factors
    return PriorityFactors(age=f.age, fairshare=f.fairshare, qos=f.qos, job_size=f.job_size,
                           partition=f.partition)


def shifted(snap: Snapshot, dt: float) -> Snapshot:
    """The same frame ``dt`` seconds later: its clock and every job's instants."""
    if not dt:
        return snap

    def later(t: float | None) -> float | None:
        return None if t is None else t + dt

    jobs = [msgspec.structs.replace(
        j, submit_time=j.submit_time + dt, eligible_time=later(j.eligible_time),
        start_time=later(j.start_time), end_time=later(j.end_time)) for j in snap.jobs]
    return msgspec.structs.replace(snap, taken_at=snap.taken_at + dt, jobs=jobs)


def _integrate(fs: list[float], use: list[float], t0: float, t1: float,
               half_life: float) -> float:
    dt = t1 - t0
    if dt > 0:
        decay = 2.0 ** (-dt / half_life)
        for k, u in enumerate(use):
            fs[k] = fs[k] * decay + u * dt
    return max(t0, t1)
