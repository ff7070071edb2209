"""A period's real jobs as a trace for the quota advisor (``quotatop advise --history 30d
--source slurm``): the runs sacct lists (review/sacct.py, one JobRecord per run)
folded into one TraceJob per job, on the snapshot's own nodes, with the quotas in force
taken from the snapshot's teams. No I/O: the command gathers, this only converts.

One job is one TraceJob (a requeued job's runs are one job, as the simulation requeues on
its own): submitted at its first submit, running for its last run's length (the run it
completed, or the part up to the period's end of a run still going). A job that never
started in the period has no known run time and is left out, counted in the warnings.
"""

from __future__ import annotations

from collections.abc import Sequence

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Node, Team
from quotatop.review.report import JobRecord, gpu_counts
from quotatop.simulation.traces.model import Trace, TraceJob, TraceNode


def _amount(alloc: dict[str, float], res: str) -> float:
    return sum(gpu_counts(alloc).values()) if res == "gpu" else alloc.get(res, 0.0)


def period_trace(records: Sequence[JobRecord], nodes: Sequence[Node], *, since: float,
                 until: float, name: str) -> Trace:
    """The jobs of ``[since, until)`` on ``nodes``; GPUs when any job held one, else CPUs.
    A UserError when the period holds no job that ran."""
    runs: dict[str, list[JobRecord]] = {}
    for r in records:
        runs.setdefault(r.job_id, []).append(r)
    res = "gpu" if any(_amount(r.alloc, "gpu") > 0 for r in records) else "cpu"
    jobs: list[TraceJob] = []
    never = 0
    for job_id, rs in runs.items():
        started = [r for r in rs if r.start is not None]
        if not started:
            never += 1
            continue
        last = max(started, key=lambda r: r.start or 0.0)
        assert last.start is not None
        end = until if last.end is None else min(last.end, until)
        size = _amount(last.alloc, res)
        if size <= 0:
            continue  # held none of the resource the quotas are on
        first_start = min(r.start for r in started if r.start is not None)
        jobs.append(TraceJob(
            id=job_id, team=last.team, user=last.user, request={res: size},
            submit_time=min(r.submit for r in rs), duration=max(1.0, end - last.start),
            recorded_start=first_start, status=last.state, qos=last.qos or ""))
    if not jobs:
        raise UserError(f"{name}: no job ran between the period's start and end: nothing "
                        "to simulate (a longer --history?)")
    jobs.sort(key=lambda j: (j.submit_time, j.id))
    trace_nodes = [TraceNode(name=n.name, gpus=float(n.capacity.get(res, 0.0)),
                             gpu_type=(n.gpu_type or "") if res == "gpu" else "")
                   for n in nodes if n.capacity.get(res, 0.0) > 0]
    if not trace_nodes:
        raise UserError(f"{name}: the snapshot lists no node with {res}: no cluster to "
                        "simulate on")
    capacity = sum(n.gpus for n in trace_nodes)
    warnings = ([f"{never} job(s) never started in the period: no run time, left out"]
                if never else [])
    return Trace(path=name, format="sacct", jobs=jobs, capacity={res: capacity},
                 capacity_from=f"the {len(trace_nodes)} nodes of the snapshot",
                 skipped=never, warnings=warnings, nodes=trace_nodes)


def current_quotas(teams: Sequence[Team], res: str, trace_teams: Sequence[str]
                   ) -> dict[str, tuple[float | None, float | None]]:
    """The quotas in force: per team of the trace with a guarantee or a max on ``res``,
    (guarantee, max), None where it has none. Slurm has maxes (GrpTRES) and no
    guarantees: such a team is (None, max), a cap and no share of a cohort."""
    out: dict[str, tuple[float | None, float | None]] = {}
    by_name = {t.name: t for t in teams}
    for name in trace_teams:
        t = by_name.get(name)
        if t is None:
            continue
        g = (t.guarantee or {}).get(res)
        m = (t.max or {}).get(res)
        if g is None and m is None:
            continue
        out[name] = (None if g is None else float(g),
                     None if m is None else float(max(m, g or 0.0)))
    return out
