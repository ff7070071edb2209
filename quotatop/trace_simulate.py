"""`quotatop simulate TRACE --format swf|csv`: a workload trace through a policy,
with the standard metrics, and optionally a recording `quotatop replay` opens.

Policies: ``recorded`` replays the traced cluster's own start times; ``fifo``
runs strict first-come-first-served on the trace's capacity, in the core when
it has a ``simulate`` and otherwise in the Python reference below (said in the
output); ``backfill`` is EASY backfill in the core only.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys

from collectors.traces.model import Trace, TraceError
from quotatop.errors import UserError

POLICIES = ("recorded", "fifo", "backfill")
BSLD_TAU = 10.0  # seconds: bounded slowdown ignores shorter run times


def load_trace(path: str, fmt: str, *, gpus: float | None = None,
               team_by: str = "group") -> Trace:
    from collectors.traces.gpu_csv import load_gpu_csv
    from collectors.traces.swf import load_swf

    try:
        if fmt == "swf":
            return load_swf(path, team_by=team_by)
        return load_gpu_csv(path, gpus=gpus)
    except TraceError as e:
        raise UserError(str(e)) from None


def fifo_reference(trace: Trace) -> list[float]:
    """Start times under strict FIFO on one pool of the trace's capacity."""
    (res, cap), = trace.capacity.items()
    order = sorted(range(len(trace.jobs)), key=lambda i: (trace.jobs[i].job.submit_time, i))
    starts = [0.0] * len(trace.jobs)
    running: list[tuple[float, float]] = []  # (end, amount)
    free, now = cap, 0.0
    for i in order:
        tj = trace.jobs[i]
        need = min(tj.job.request.get(res, 0.0), cap)  # a job larger than the cluster gets all
        now = max(now, tj.job.submit_time)
        while running and running[0][0] <= now:
            free += heapq.heappop(running)[1]
        while free < need:
            end, amount = heapq.heappop(running)
            now, free = max(now, end), free + amount
            while running and running[0][0] <= now:
                free += heapq.heappop(running)[1]
        starts[i] = now
        free -= need
        heapq.heappush(running, (now + tj.duration, need))
    return starts


def schedule(trace: Trace, policy: str) -> tuple[list[float], str]:
    """Start time per job and which engine produced them."""
    if policy == "recorded":
        starts = [tj.recorded_start for tj in trace.jobs]
        if any(s is None for s in starts):
            raise UserError(f"{trace.path}: some jobs have no recorded start; use --policy fifo")
        return [float(s) for s in starts], "the trace's own start times"  # type: ignore[arg-type]
    import scheduler_core

    core = getattr(scheduler_core, "simulate", None)
    if core is not None:
        try:
            result = core([tj.job for tj in trace.jobs], [tj.duration for tj in trace.jobs],
                          trace.capacity, policy)
            return [float(s) for s in result], f"scheduler_core.simulate ({policy})"
        except TypeError:
            pass  # a different signature than this module expects: use the reference
    if policy == "fifo":
        return fifo_reference(trace), "Python FIFO reference (core simulate not available)"
    raise UserError(f"--policy {policy} needs the core's simulate, not in this build")


def metrics(trace: Trace, starts: list[float]) -> dict[str, float]:
    (res, cap), = trace.capacity.items()
    waits, bslds, by_team = [], [], {}
    work, first, last = 0.0, float("inf"), 0.0
    for tj, s in zip(trace.jobs, starts, strict=True):
        wait = max(0.0, s - tj.job.submit_time)
        run = tj.duration
        b = max(1.0, (wait + run) / max(run, BSLD_TAU))
        waits.append(wait)
        bslds.append(b)
        by_team.setdefault(tj.job.team, []).append(b)
        work += run * min(tj.job.request.get(res, 0.0), cap)
        first, last = min(first, tj.job.submit_time), max(last, s + run)
    span = max(last - first, 1e-9)
    team_means = [statistics.fmean(v) for v in by_team.values()]
    # Jain's index over teams' mean bounded slowdown: 1 = every team slowed alike.
    jain = sum(team_means) ** 2 / (len(team_means) * sum(x * x for x in team_means))
    return {"jobs": float(len(waits)), "mean_wait": statistics.fmean(waits),
            "median_wait": statistics.median(waits),
            "mean_bounded_slowdown": statistics.fmean(bslds),
            "utilization": work / (cap * span), "jain_index_teams": jain,
            "teams": float(len(by_team)), "makespan": span}


def record(trace: Trace, starts: list[float], path: str, *, frames: int = 500) -> int:
    """Write ``frames`` snapshots evenly over the simulated span."""
    from collectors.model import PENDING, RUNNING, Job, Node, Snapshot, Team
    from collectors.recording import Recorder, RecordingError

    (res, cap), = trace.capacity.items()
    t0 = min(tj.job.submit_time for tj in trace.jobs)
    t1 = max(s + tj.duration for tj, s in zip(trace.jobs, starts, strict=True))
    teams = sorted({tj.job.team for tj in trace.jobs})
    step = max((t1 - t0) / max(frames - 1, 1), 1e-9)
    order = sorted(range(len(starts)), key=lambda i: trace.jobs[i].job.submit_time)
    try:
        rec = Recorder(path, cluster=trace.path, source=f"trace:{trace.format}").start()
    except RecordingError as e:
        raise UserError(str(e)) from None
    n = 0
    try:
        for f in range(frames):
            t = t0 + f * step
            jobs, usage = [], dict.fromkeys(teams, 0.0)
            for i in order:
                tj, s = trace.jobs[i], starts[i]
                if tj.job.submit_time > t:
                    break
                if s + tj.duration <= t:
                    continue
                state = RUNNING if s <= t else PENDING
                if state == RUNNING:
                    usage[tj.job.team] += tj.job.request.get(res, 0.0)
                jobs.append(Job(id=tj.job.id, team=tj.job.team, user=tj.job.user,
                                request=tj.job.request, submit_time=tj.job.submit_time,
                                time_limit=tj.job.time_limit, state=state,
                                start_time=s if state == RUNNING else None))
            rec.append(Snapshot(
                cluster=trace.path, source=f"trace:{trace.format}", taken_at=t,
                nodes=[Node(name="cluster", capacity={res: cap},
                            allocated={res: min(cap, sum(usage.values()))})],
                teams=[Team(name=x, usage={res: usage[x]}) for x in teams], jobs=jobs,
                meta={"unit": res, "trace": trace.path}))
            n += 1
    finally:
        rec.stop()
    return n


def run(args: argparse.Namespace) -> int:
    if args.policy not in POLICIES:
        raise UserError(f"--policy {args.policy!r}: traces take {', '.join(POLICIES)}")
    trace = load_trace(args.file, args.format, gpus=args.gpus, team_by=args.team_by)
    starts, engine = schedule(trace, args.policy)
    m = metrics(trace, starts)
    out = {"trace": trace.path, "format": trace.format, "policy": args.policy,
           "engine": engine, "capacity": trace.capacity, "capacity_from": trace.capacity_from,
           "skipped_lines": trace.skipped, **m}
    if args.record:
        out["recorded_frames"] = record(trace, starts, args.record, frames=args.frames)
        out["recording"] = args.record
    if args.json:
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        (res, cap), = trace.capacity.items()
        print(f"{trace.path} ({trace.format}): {m['jobs']:.0f} jobs, {m['teams']:.0f} teams, "
              f"{cap:g} {res} ({trace.capacity_from}); policy {args.policy} via {engine}")
        if trace.skipped:
            print(f"skipped {trace.skipped} lines: " + "; ".join(trace.warnings))
        print(f"mean wait {m['mean_wait']:.0f} s, median wait {m['median_wait']:.0f} s, "
              f"mean bounded slowdown {m['mean_bounded_slowdown']:.2f} (τ={BSLD_TAU:g} s)")
        print(f"utilization {m['utilization']:.1%}, Jain's index over teams "
              f"{m['jain_index_teams']:.3f}")
        if args.record:
            print(f"recording: {args.record} ({out['recorded_frames']} frames)")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["swf", "csv"],
                   help="FILE is a workload trace (SWF or GPU-cluster CSV), not a scenario")
    p.add_argument("--policy", default="fifo", help=f"for traces: {', '.join(POLICIES)}")
    p.add_argument("--gpus", type=float, help="for CSV traces: the cluster's GPU count")
    p.add_argument("--team-by", choices=["group", "user"], default="group",
                   help="for SWF: which id names the team")
    p.add_argument("--record", metavar="FILE", help="for traces: write a recording")
    p.add_argument("--frames", type=int, default=500, help="frames in --record")
    p.add_argument("--json", action="store_true", help="for traces: metrics as one JSON line")
