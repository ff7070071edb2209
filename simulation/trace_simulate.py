"""A workload trace through a policy of the scheduling core, with the standard metrics:
what `quotatop simulate TRACE [--format swf|csv|philly]` computes (its flags, output and
``--record`` are quotatop/commands/simulate_trace.py's). TRACE is a file, or the name of a
trace bundled in demo_data/traces/ (``nasa-ipsc``: a file name's start, case ignored).

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

import math
import statistics
from pathlib import Path

from quotatop.collectors.errors import UserError
from quotatop.collectors.gc_pause import gc_paused
from quotatop.collectors.model import Node, QoS, Snapshot, Team
from quotatop.simulation import DEMO_DATA
from quotatop.simulation.traces.model import MAX_NODES, Trace, TraceError, TraceJob

POLICIES = ("fifo", "easy", "conservative", "multifactor", "recorded")
BSLD_TAU = 10.0  # seconds: bounded slowdown ignores shorter run times
CSV_GPUS_PER_NODE = 8.0  # a DGX-style node, when the CSV does not say
TRACE_DIR = DEMO_DATA / "traces"  # bundled traces, beside the packages (repo or wheel)
SUFFIX_FORMAT = {".swf": "swf", ".csv": "csv", ".json": "philly"}
FORMATS = ("swf", "csv", "philly")


def bundled_traces() -> list[Path]:
    """The traces shipped in demo_data/traces/ (SWF and CSV files)."""
    if not TRACE_DIR.is_dir():
        return []
    return sorted(p for p in TRACE_DIR.iterdir() if p.suffix.lower() in (".swf", ".csv"))


def resolve_trace(name: str, fmt: str | None) -> tuple[str, str] | None:
    """(path, format) of the trace ``name`` names, or None when it names no trace (a
    scenario, then). A name without a directory that is not an existing file is a
    bundled trace: demo_data/traces/<name>*.swf|csv, case ignored. The format is
    ``fmt``, else the file's suffix (.swf, .csv, .json: Philly)."""
    p = Path(name)
    if not p.exists() and p.name == name and not name.lower().endswith(".toml"):
        found = [t for t in bundled_traces() if t.name.lower().startswith(name.lower())]
        exact = [t for t in found if t.stem.lower() == name.lower()]
        if len(exact) == 1 or len(found) == 1:
            t = (exact or found)[0]
            return str(t), fmt or SUFFIX_FORMAT[t.suffix.lower()]
        if len(found) > 1:
            raise UserError(f"{name!r} names several bundled traces: "
                            f"{', '.join(t.name for t in found)}")
        if fmt is None and p.suffix.lower() not in SUFFIX_FORMAT:
            names = ", ".join(t.name for t in bundled_traces()) or "none"
            raise UserError(f"{name}: no such file, nor a bundled trace of that name "
                            f"(bundled: {names})")
    if fmt is not None:
        return name, fmt
    if p.suffix.lower() in SUFFIX_FORMAT:
        return name, SUFFIX_FORMAT[p.suffix.lower()]
    return None


def load_trace(path: str, fmt: str, *, gpus: float | None = None,
               team_by: str = "group", columns: str | None = None,
               nodes_file: str | None = None) -> Trace:
    from quotatop.simulation.traces.gpu_csv import load_gpu_csv, load_nodes, parse_columns
    from quotatop.simulation.traces.philly import load_philly
    from quotatop.simulation.traces.swf import load_swf

    try:
        if fmt == "swf":
            if columns or nodes_file:
                raise UserError("--columns and --nodes-file are for GPU-cluster traces "
                                "(csv, philly), not SWF")
            return load_swf(path, team_by=team_by)
        if fmt == "philly" or (fmt == "csv" and _looks_json(path)):
            if columns:
                raise UserError("--columns is for CSV traces; Philly JSON has its own keys")
            trace = load_philly(path, gpus=gpus)
        else:
            try:
                mapping = parse_columns(columns) if columns else None
            except ValueError as e:
                raise UserError(str(e)) from None
            trace = load_gpu_csv(path, gpus=gpus, columns=mapping)
        if nodes_file:
            trace.nodes = load_nodes(nodes_file)
            trace.capacity = {"gpu": sum(n.gpus for n in trace.nodes)}
            trace.capacity_from = f"--nodes-file ({len(trace.nodes)} nodes)"
        return trace
    except TraceError as e:
        raise UserError(str(e)) from None


def _looks_json(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip()[:1] in (b"[", b"{")
    except OSError:
        return False  # the reader says why, naming the file


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
    if trace.nodes:  # the trace's own nodes: count and largest
        return len(trace.nodes), max(n.gpus for n in trace.nodes)
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


def members(j: TraceJob) -> list[str]:
    """The core's job ids of a trace job: itself, or one per worker (a gang)."""
    return [j.id] if j.workers <= 1 else [f"{j.id}/w{k}" for k in range(j.workers)]


def core_inputs(trace: Trace, nodes: int, per_node: float) -> tuple[Snapshot, list]:  # type: ignore[type-arg]
    """The core's cluster and jobs. The trace's own nodes (``--nodes-file``) keep their
    sizes and GPU models, and a job asking a model asks ``gpu:<model>`` too; otherwise
    ``nodes`` alike nodes of ``per_node``. A job of several workers is a gang, each
    worker asking its share. QoS classes become the snapshot's QoS (a spot class
    preempted by the others)."""
    from quotatop.scheduler_core import SimJob

    (res, _), = trace.capacity.items()
    if trace.nodes:
        node_list = [Node(name=n.name, gpu_type=n.gpu_type or None,
                          capacity={res: n.gpus, **({f"gpu:{n.gpu_type}": n.gpus}
                                                    if n.gpu_type else {})})
                     for n in trace.nodes]
    else:
        width = len(str(nodes))
        node_list = [Node(name=f"n{i:0{width}d}", capacity={res: per_node})
                     for i in range(1, nodes + 1)]
    qos = [QoS(name=q, priority=0 if "spot" in q.lower() else 1, preempts=list(v))
           for q, v in trace.qos.items()]
    cluster = Snapshot(
        cluster=Path(trace.path).name, source=f"trace:{trace.format}", nodes=node_list,
        teams=[Team(name=t) for t in sorted({tj.team for tj in trace.jobs})], qos=qos)
    jobs = []
    own_nodes = bool(trace.nodes)
    one_each = own_nodes or per_node <= 0
    for j in trace.jobs:
        workers = j.workers
        need = j.request.get(res, 0.0) / workers if workers > 1 else j.request.get(res, 0.0)
        request = {res: need}
        if j.gpu_type and own_nodes:  # no node of that model: the core rejects it
            request[f"gpu:{j.gpu_type}"] = need
        limit, duration = j.time_limit, j.duration
        if one_each:
            # per_node 0: every job of the trace asks 0 GPUs (found by tests/fuzz: a
            # ZeroDivisionError below); such a job fits one node of none.
            asked = 1
        else:
            # Capped one above the cluster: such a job is rejected all the same.
            asked = max(1, min(nodes + 1, math.ceil(min(need / per_node - 1e-9, nodes + 1))))
        # A traced job ran its recorded time; a limit below it would kill it early.
        # Without a requested time the scheduler plans with the recorded run time
        # (perfect estimates, the textbook convention): with no limit at all no
        # reservation could ever be placed, and EASY and conservative backfilling
        # would both become greedy first fit.
        planned = duration if limit is None or limit < duration else limit
        qos = j.qos or "normal"
        # One job, or a gang of its workers (no member list built for the common one).
        ids, gang = ((j.id,), None) if workers <= 1 else (members(j), j.id)
        for mid in ids:
            jobs.append(SimJob(
                id=mid, submit_time=j.submit_time, duration=duration, request=request,
                team=j.team, user=j.user, qos=qos, time_limit=planned,
                nodes_requested=asked, gang=gang))
    return cluster, jobs


def core_policy(policy: str, resolution: float = 1.0,
                preemption: bool = False):  # type: ignore[no-untyped-def]
    """``resolution``: seconds scheduling passes snap to (1: exact trace times;
    60: Slurm's sched_interval, fewer passes on a large trace). ``preemption``: a
    trace's QoS classes preempt (Alibaba's HP over Spot)."""
    from quotatop.scheduler_core import Policy, PriorityWeights

    if policy == "multifactor":
        return Policy(bf_resolution=resolution)
    fcfs = PriorityWeights(age=0.0, fairshare=0.0, qos=0.0)  # ties by submit time: FCFS
    backfill = {"fifo": "none", "easy": "easy", "conservative": "conservative"}[policy]
    # Reservations leave the capacity idle now to backfill: a job that fits beside the
    # head's reservation is not held (textbook EASY; tests/test_textbook_easy.py).
    return Policy(weights=fcfs, backfill=backfill, bf_resolution=resolution,
                  preemption=preemption, reserve_busy_first=True)


def simulate_trace(trace: Trace, policy: str, *, nodes: int | None = None,
                   per_node: float | None = None,
                   resolution: float = 1.0):  # type: ignore[no-untyped-def]
    """The core's SimResult for the trace under ``policy``; UserError if it fails."""
    from quotatop import scheduler_core

    n, per = cluster_shape(trace, nodes=nodes, per_node=per_node)
    with gc_paused():
        cluster, jobs = core_inputs(trace, n, per)
    try:
        preempts = any(trace.qos.values())
        return scheduler_core.simulate(jobs, core_policy(policy, resolution, preempts),
                                       cluster=cluster)
    except ValueError as e:
        raise UserError(f"{trace.path}: the scheduling core failed: {e}") from None


def planned_with_runtime(trace: Trace) -> int:
    """Jobs without a requested time, which the scheduler plans with their run time."""
    return sum(1 for j in trace.jobs if j.time_limit is None)


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


def job_outcomes(trace: Trace, result) -> list[tuple[float | None, float | None, bool]]:  # type: ignore[no-untyped-def]
    """(start, end, rejected) of each trace job from the core's outcomes: a gang's
    workers start together; its end is the last worker's."""
    by_id = {o.job_id: o for o in result.jobs}
    out = []
    for j in trace.jobs:
        os_ = [by_id[m] for m in members(j)]
        starts = [o.start for o in os_]
        ends = [o.end for o in os_]
        out.append((None if any(x is None for x in starts) else min(starts),  # type: ignore[type-var]
                    None if any(x is None for x in ends) else max(ends),  # type: ignore[type-var]
                    any(o.state == "rejected" for o in os_)))
    return out


def outcome_metrics(trace: Trace, outcomes: list, result) -> dict[str, float]:  # type: ignore[no-untyped-def,type-arg]
    """The metrics per trace job (a gang of workers is one job), from the core's
    outcomes, computed the core's way; used when the core's own count jobs differently
    (workers) or work is lost to preemption."""
    (res, cap), = trace.capacity.items()
    waits, bslds, by_team = [], [], dict.fromkeys(sorted({j.team for j in trace.jobs}), 0.0)
    work, first, last = 0.0, float("inf"), 0.0
    for tj, (s, e, _) in zip(trace.jobs, outcomes, strict=True):
        first = min(first, tj.submit_time)
        if s is None:
            continue
        waits.append(s - tj.submit_time)
        end = e if e is not None else s + tj.duration
        bslds.append(max(1.0, (end - tj.submit_time) / max(tj.duration, BSLD_TAU)))
        used = tj.duration * min(tj.request.get(res, 0.0), cap)
        by_team[tj.team] += used
        work += used
        last = max(last, end)
    span = max(last - first, 1e-9)
    x = list(by_team.values())
    jain = sum(x) ** 2 / (len(x) * sum(v * v for v in x)) if any(x) else 1.0
    nan = float("nan")
    return {"jobs": float(len(trace.jobs)), "started": float(len(waits)),
            "rejected": float(sum(1 for o in outcomes if o[2])),
            "mean_wait": statistics.fmean(waits) if waits else nan,
            "median_wait": statistics.median(waits) if waits else nan,
            "mean_bounded_slowdown": statistics.fmean(bslds) if bslds else nan,
            "utilization": work / (cap * span), "jain_index_teams": jain,
            "teams": float(len(by_team)), "makespan": span if waits else 0.0,
            "preemptions": float(result.metrics.preemptions),
            "events": float(result.event_count)}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 1]) of a non-empty list."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def no_recorded_waits(trace: Trace) -> str | None:
    """Why ``--compare-recorded`` has nothing to compare, or None."""
    if any(tj.recorded_start is not None for tj in trace.jobs):
        return None
    why = ("SWF field 3 is -1 on every job line" if trace.format == "swf"
           else "it has no start times")
    return f"{trace.path}: no recorded waits in this trace ({why}): nothing to compare"


def compare_recorded(trace: Trace, starts: list[float]) -> dict[str, float]:
    """Per-job absolute error of the simulated waits against the recorded ones, beside
    two naive predictors (zero wait; the median recorded wait): median and p90."""
    rec, sim = [], []
    for tj, s in zip(trace.jobs, starts, strict=True):
        if tj.recorded_start is None or not math.isfinite(s):
            continue
        rec.append(max(0.0, tj.recorded_start - tj.submit_time))
        sim.append(s - tj.submit_time)
    if not rec:
        raise UserError(f"{trace.path}: no job has both a recorded and a simulated start")
    med = statistics.median(rec)
    err = {"simulated": [abs(a - b) for a, b in zip(sim, rec, strict=True)],
           "zero_wait": list(rec), "median_recorded": [abs(med - r) for r in rec]}
    out = {"jobs": float(len(rec)), "left_out": float(len(trace.jobs) - len(rec)),
           "unknown_runtime": float(trace.unknown_runtime), "median_recorded_wait": med}
    for k, e in err.items():
        out[f"{k}_median_abs"] = statistics.median(e)
        out[f"{k}_p90_abs"] = percentile(e, 0.9)
    return out


def unused(trace: Trace) -> list[str]:
    extra = list(trace.unused)
    if not trace.nodes and any(j.gpu_type for j in trace.jobs):
        extra.append("GPU type (untyped nodes; pass --nodes-file to keep it)")
    return extra
