"""`quotatop simulate TRACE --format swf|csv`: a workload trace through a policy
of the scheduling core, with the standard metrics, and optionally a recording
`quotatop replay` opens.

The cluster comes from the trace: SWF ``MaxNodes``/``MaxProcs`` (nodes of
MaxProcs/MaxNodes processors; MaxProcs alone: one pool), a CSV's ``--nodes`` /
``--gpus-per-node`` (default: the peak use, or ``--gpus``, in 8-GPU nodes).
Policies: ``fifo`` (first come first served, no backfill), ``easy`` and
``conservative`` (FCFS order with that backfill), ``multifactor`` (the core's
default fair-share + age priority with EASY backfill), and ``recorded``: the
traced cluster's own start times, replayed without simulating. If the core
fails, that is one line and exit 2; there is no other engine behind it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from collectors.gc_pause import gc_paused
from collectors.model import Node, Snapshot, Team
from collectors.traces.model import Trace, TraceError
from quotatop.errors import UserError
from quotatop.flags import MAX_FRAMES, MAX_GPUS, MAX_NODES, MAX_PER_NODE, number, seconds

POLICIES = ("fifo", "easy", "conservative", "multifactor", "recorded")
BSLD_TAU = 10.0  # seconds: bounded slowdown ignores shorter run times
CSV_GPUS_PER_NODE = 8.0  # a DGX-style node, when the CSV does not say


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


def _swf_max_nodes(path: str) -> int | None:
    # Header comments lead the file; stop at the first job line.
    try:
        with open(path, errors="replace") as fh:
            for line in fh:
                s = line.strip()
                if s and not s.startswith(";"):
                    break
                key, sep, value = s[1:].partition(":")
                if sep and key.strip().lower() == "maxnodes":
                    try:
                        n = int(float(value.split()[0]))
                    except (ValueError, IndexError, OverflowError):
                        return None
                    return n if n > 0 else None
    except OSError:
        return None
    return None


def cluster_shape(trace: Trace, *, nodes: int | None = None,
                  per_node: float | None = None) -> tuple[int, float]:
    """(node count, amount of the trace's resource per node)."""
    n, per = _shape(trace, nodes, per_node)
    if not 1 <= n <= MAX_NODES:  # each node is built: 10^12 of them would exhaust memory
        raise UserError(f"{trace.path}: the cluster would have {n:g} nodes, more than "
                        f"{MAX_NODES}; pass --nodes and --gpus-per-node")
    return int(n), per


def _shape(trace: Trace, nodes: int | None, per_node: float | None) -> tuple[float, float]:
    (cap,) = trace.capacity.values()
    if nodes is not None and per_node is not None:
        return nodes, per_node
    if per_node is not None:
        q = cap / per_node  # may be huge (or inf): checked before ceil
        return (max(1, math.ceil(q)) if q <= MAX_NODES else q), per_node
    if nodes is not None:
        return nodes, cap / nodes
    if trace.format == "swf":
        n = _swf_max_nodes(trace.path)
        if n and n <= MAX_NODES and "maxprocs" in trace.capacity_from and cap % n == 0:
            return n, cap / n
        return 1, cap  # processors as one pool, as SWF simulators usually model them
    q = cap / CSV_GPUS_PER_NODE
    return (max(1, math.ceil(q)) if q <= MAX_NODES else q), min(cap, CSV_GPUS_PER_NODE)


def core_inputs(trace: Trace, nodes: int, per_node: float) -> tuple[Snapshot, list]:  # type: ignore[type-arg]
    from scheduler_core import SimJob

    (res, _), = trace.capacity.items()
    width = len(str(nodes))
    cluster = Snapshot(
        cluster=Path(trace.path).name, source=f"trace:{trace.format}",
        nodes=[Node(name=f"n{i:0{width}d}", capacity={res: per_node})
               for i in range(1, nodes + 1)],
        teams=[Team(name=t) for t in sorted({tj.team for tj in trace.jobs})])
    jobs = []
    for j in trace.jobs:
        need = j.request.get(res, 0.0)
        limit = j.time_limit
        jobs.append(SimJob(
            id=j.id, submit_time=j.submit_time, duration=j.duration, request=j.request,
            team=j.team, user=j.user,
            # A traced job ran its recorded time; a limit below it would kill it early.
            time_limit=None if limit is None else max(limit, j.duration),
            # Capped one above the cluster: such a job is rejected all the same.
            nodes_requested=max(1, min(nodes + 1, math.ceil(min(need / per_node - 1e-9,
                                                                 nodes + 1))))))
    return cluster, jobs


def core_policy(policy: str, resolution: float = 1.0):  # type: ignore[no-untyped-def]
    """``resolution``: seconds scheduling passes snap to (1: exact trace times;
    60: Slurm's sched_interval, fewer passes on a large trace)."""
    from scheduler_core import Policy, PriorityWeights

    if policy == "multifactor":
        return Policy(bf_resolution=resolution)
    fcfs = PriorityWeights(age=0.0, fairshare=0.0, qos=0.0)  # ties by submit time: FCFS
    backfill = {"fifo": "none", "easy": "easy", "conservative": "conservative"}[policy]
    return Policy(weights=fcfs, backfill=backfill, bf_resolution=resolution, preemption=False)


def simulate_trace(trace: Trace, policy: str, *, nodes: int | None = None,
                   per_node: float | None = None,
                   resolution: float = 1.0):  # type: ignore[no-untyped-def]
    """The core's SimResult for the trace under ``policy``; UserError if it fails."""
    import scheduler_core

    n, per = cluster_shape(trace, nodes=nodes, per_node=per_node)
    with gc_paused():
        cluster, jobs = core_inputs(trace, n, per)
    try:
        return scheduler_core.simulate(jobs, core_policy(policy, resolution), cluster=cluster)
    except ValueError as e:
        raise UserError(f"{trace.path}: the scheduling core failed: {e}") from None


def recorded_starts(trace: Trace) -> list[float]:
    starts = [tj.recorded_start for tj in trace.jobs]
    if any(s is None for s in starts):
        raise UserError(f"{trace.path}: some jobs have no recorded start; "
                        "use --policy fifo (or easy, conservative, multifactor)")
    return [float(s) for s in starts]  # type: ignore[arg-type]


def metrics(trace: Trace, starts: list[float]) -> dict[str, float]:
    """The core's metrics, computed the core's way, for given start times (the
    ``recorded`` policy: the traced cluster's own schedule)."""
    (res, cap), = trace.capacity.items()
    waits, bslds, by_team = [], [], {}
    work, first, last = 0.0, float("inf"), 0.0
    for tj, s in zip(trace.jobs, starts, strict=True):
        wait = max(0.0, s - tj.submit_time)
        run = tj.duration
        waits.append(wait)
        bslds.append(max(1.0, (wait + run) / max(run, BSLD_TAU)))
        used = run * min(tj.request.get(res, 0.0), cap)
        by_team[tj.team] = by_team.get(tj.team, 0.0) + used
        work += used
        first, last = min(first, tj.submit_time), max(last, s + run)
    span = max(last - first, 1e-9)
    x = list(by_team.values())
    # Jain's index over teams' usage per unit of weight (all weights 1), as the core's.
    jain = sum(x) ** 2 / (len(x) * sum(v * v for v in x)) if any(x) else 1.0
    return {"jobs": float(len(waits)), "mean_wait": statistics.fmean(waits),
            "median_wait": statistics.median(waits),
            "mean_bounded_slowdown": statistics.fmean(bslds),
            "utilization": work / (cap * span), "jain_index_teams": jain,
            "teams": float(len(by_team)), "makespan": span}


def core_metrics(result) -> dict[str, float]:  # type: ignore[no-untyped-def]
    m = result.metrics
    return {"jobs": float(m.submitted), "started": float(m.started),
            "rejected": float(m.rejected),
            "mean_wait": m.mean_wait if m.mean_wait is not None else float("nan"),
            "median_wait": m.median_wait if m.median_wait is not None else float("nan"),
            "mean_bounded_slowdown": (m.mean_bounded_slowdown
                                      if m.mean_bounded_slowdown is not None else float("nan")),
            "utilization": m.utilization, "jain_index_teams": m.jain_fairness,
            "teams": float(len(result.teams)), "makespan": m.end - m.start,
            "events": float(result.event_count)}


def record(trace: Trace, starts: list[float], path: str, *, frames: int = 500) -> int:
    """Write ``frames`` snapshots evenly over the simulated span."""
    from collectors.model import PENDING, RUNNING, Job, Node, Snapshot, Team
    from collectors.recording import Recorder, RecordingError

    (res, cap), = trace.capacity.items()
    t0 = min(tj.submit_time for tj in trace.jobs)
    t1 = max((s + tj.duration for tj, s in zip(trace.jobs, starts, strict=True)
              if math.isfinite(s)), default=t0)
    teams = sorted({tj.team for tj in trace.jobs})
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
                if tj.submit_time > t:
                    break
                if s + tj.duration <= t:
                    continue
                state = RUNNING if s <= t else PENDING
                if state == RUNNING:
                    usage[tj.team] += tj.request.get(res, 0.0)
                jobs.append(Job(id=tj.id, team=tj.team, user=tj.user,
                                request=tj.request, submit_time=tj.submit_time,
                                time_limit=tj.time_limit, state=state,
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
    if not args.resolution > 0:
        raise UserError(f"--resolution {args.resolution:g}: must be a positive number of seconds")
    trace = load_trace(args.file, args.format, gpus=args.gpus, team_by=args.team_by)
    if args.policy == "recorded":
        starts = recorded_starts(trace)
        m, engine = metrics(trace, starts), "the trace's own start times"
        shape = cluster_shape(trace, nodes=args.nodes, per_node=args.gpus_per_node)
    else:
        shape = cluster_shape(trace, nodes=args.nodes, per_node=args.gpus_per_node)
        result = simulate_trace(trace, args.policy, nodes=shape[0], per_node=shape[1],
                                resolution=args.resolution)
        m, engine = core_metrics(result), f"scheduler_core.simulate ({args.policy})"
        outcome = {o.job_id: o for o in result.jobs}
        # A job the core never started (rejected: larger than any node set) is left out.
        starts = [outcome[tj.id].start if outcome[tj.id].start is not None
                  else math.inf for tj in trace.jobs]
    (res, cap), = trace.capacity.items()
    out = {"trace": trace.path, "format": trace.format, "policy": args.policy,
           "engine": engine, "capacity": trace.capacity, "capacity_from": trace.capacity_from,
           "nodes": shape[0], "per_node": shape[1], "skipped_lines": trace.skipped, **m}
    if args.record:
        out["recorded_frames"] = record(trace, starts, args.record, frames=args.frames)
        out["recording"] = args.record
    if args.json:
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        print(f"{trace.path} ({trace.format}): {m['jobs']:.0f} jobs, {m['teams']:.0f} teams, "
              f"{cap:g} {res} on {shape[0]} nodes of {shape[1]:g} ({trace.capacity_from}); "
              f"policy {args.policy} via {engine}")
        if trace.skipped:
            print(f"skipped {trace.skipped} lines: " + "; ".join(trace.warnings))
        if m.get("rejected"):
            print(f"rejected by the core: {m['rejected']:.0f} jobs (no set of nodes holds them)")
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
    p.add_argument("--gpus", type=number(0, MAX_GPUS, lo_open=True),
                   help="for CSV traces: the cluster's GPU count")
    p.add_argument("--resolution", type=seconds(), default=1.0,
                   help="for traces: seconds scheduling passes snap to (default 1)")
    p.add_argument("--nodes", type=number(1, MAX_NODES, integer=True),
                   help="for traces: the cluster's node count")
    p.add_argument("--gpus-per-node", type=number(0, MAX_PER_NODE, lo_open=True),
                   help="for traces: GPUs (SWF: processors) per node")
    p.add_argument("--team-by", choices=["group", "user"], default="group",
                   help="for SWF: which id names the team")
    p.add_argument("--record", metavar="FILE", help="for traces: write a recording")
    p.add_argument("--frames", type=number(1, MAX_FRAMES, integer=True), default=500,
                   help="frames in --record")
    p.add_argument("--json", action="store_true", help="for traces: metrics as one JSON line")
