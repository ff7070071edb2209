"""`quotatop simulate TRACE`: the trace half of the simulate command: its flags, its
printed (or JSON) metrics and its ``--record`` recording. The computation is
simulation.trace_simulate's and writing a recording is recording.store's: the command, at
the roof, joins the two rooms, which never import each other."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from quotatop import __version__
from quotatop.collectors.errors import UserError
from quotatop.collectors.human import human_duration
from quotatop.flags import MAX_FRAMES, MAX_GPUS, MAX_NODES, MAX_PER_NODE, number, seconds
from quotatop.simulation.trace_simulate import (
    BSLD_TAU,
    FORMATS,
    POLICIES,
    bundled_traces,
    cluster_shape,
    compare_recorded,
    core_metrics,
    job_outcomes,
    load_trace,
    metrics,
    no_recorded_waits,
    outcome_metrics,
    planned_with_runtime,
    recorded_starts,
    resolve_trace,
    simulate_trace,
    unused,
)
from quotatop.simulation.traces.model import Trace


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.policy not in POLICIES:
        raise UserError(f"--policy {args.policy!r}: traces take {', '.join(POLICIES)}")
    if not args.resolution > 0:
        raise UserError(f"--resolution {args.resolution:g}: must be a positive number of seconds")
    resolved = resolve_trace(args.file, args.format)
    path, fmt = resolved if resolved else (args.file, "csv")
    trace = load_trace(path, fmt, gpus=args.gpus, team_by=args.team_by,
                       columns=args.columns, nodes_file=args.nodes_file)
    if args.compare_recorded and (why := no_recorded_waits(trace)):
        raise UserError(why)
    t_read = time.perf_counter()
    shape = cluster_shape(trace, nodes=args.nodes, per_node=args.gpus_per_node)
    result = None
    if args.policy == "recorded":
        starts = recorded_starts(trace)
        m, engine = metrics(trace, starts), "the trace's own start times"
    else:
        result = simulate_trace(trace, args.policy, nodes=shape[0], per_node=shape[1],
                                resolution=args.resolution)
        engine = f"scheduler_core.simulate ({args.policy})"
        outcomes = job_outcomes(trace, result)
        if any(j.workers > 1 for j in trace.jobs) or result.metrics.preemptions:
            m = outcome_metrics(trace, outcomes, result)
        else:
            m = core_metrics(result)
        # A job the core never started (rejected: larger than any node set) is left out.
        starts = [s if s is not None else math.inf for s, _, _ in outcomes]
    t_sim = time.perf_counter()
    (res, cap), = trace.capacity.items()
    out = {"trace": trace.path, "format": trace.format, "layout": trace.layout,
           "policy": args.policy, "engine": engine, "capacity": trace.capacity,
           "capacity_from": trace.capacity_from, "nodes": shape[0], "per_node": shape[1],
           "skipped_lines": trace.skipped, "unknown_runtime": trace.unknown_runtime,
           "missing_fields": trace.missing, "unused_fields": unused(trace),
           "planned_with_runtime": planned_with_runtime(trace), **m,
           "wall_s": t_sim - t0, "read_s": t_read - t0, "simulate_s": t_sim - t_read}
    if result is not None:
        out["events_per_s"] = result.event_count / max(t_sim - t_read, 1e-9)
    if args.compare_recorded:
        out["compare_recorded"] = compare_recorded(trace, starts)
    if args.record:
        out["recorded_frames"] = record(trace, starts, args.record, frames=args.frames)
        out["recording"] = args.record
    if args.json:
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    where = (f"{shape[0]} nodes from the trace's node list" if trace.nodes
             else f"{shape[0]} nodes of {shape[1]:g}")
    print(f"{trace.path} ({trace.format}, {trace.layout}): {m['jobs']:.0f} jobs, "
          f"{m['teams']:.0f} teams, {cap:g} {res} on {where} ({trace.capacity_from}); "
          f"policy {args.policy} via {engine}")
    if trace.missing:
        print("fields not in this trace: " + "; ".join(trace.missing))
    if out["planned_with_runtime"]:
        print(f"no requested time for {out['planned_with_runtime']} jobs: backfilling plans "
              "them with their recorded run time (perfect estimates)")
    if unused(trace):
        print("in the trace, not simulated: " + "; ".join(unused(trace)))
    if trace.skipped:
        print(f"skipped {trace.skipped} lines: " + "; ".join(trace.warnings))
    if m.get("rejected"):
        print(f"rejected by the core: {m['rejected']:.0f} jobs (no set of nodes holds them)")
    if "started" in m and m["started"] + m.get("rejected", 0) < m["jobs"]:
        print(f"never started: {m['jobs'] - m['started'] - m.get('rejected', 0):.0f} jobs")
    if m.get("preemptions"):
        print(f"preemptions: {m['preemptions']:.0f} (QoS classes: "
              + ", ".join(f"{q} preempts {'/'.join(v)}" if v else f"{q} preempts none"
                          for q, v in trace.qos.items()) + ")")
    # Waits and spans for people in the one human format (the --json output keeps
    # seconds); the timings below stay in seconds: they measure this program.
    h = human_duration
    print(f"mean wait {h(m['mean_wait'])}, median wait {h(m['median_wait'])}, "
          f"mean bounded slowdown {m['mean_bounded_slowdown']:.3f} (τ={BSLD_TAU:g} s)")
    print(f"utilization {m['utilization']:.1%}, Jain's index over teams "
          f"{m['jain_index_teams']:.3f}, makespan {h(m['makespan'])}")
    if args.compare_recorded:
        print_comparison(out["compare_recorded"])
    timing = (f"wall {out['wall_s']:.2f} s (read {out['read_s']:.2f} s, "
              f"simulate {out['simulate_s']:.2f} s)")
    if result is not None:
        timing += (f"; {result.event_count:,} events, {out['events_per_s']:,.0f} events/s "
                   "in simulate")
    print(timing)
    if args.record:
        print(f"recording: {args.record} ({out['recorded_frames']} frames)")
    return 0


def print_comparison(c: dict[str, float]) -> None:
    h = human_duration
    print(f"simulated against recorded waits, {c['jobs']:.0f} jobs "
          f"(absolute error per job, median / p90):")
    print(f"  simulated: {h(c['simulated_median_abs'])} / {h(c['simulated_p90_abs'])}")
    print(f"  zero wait: {h(c['zero_wait_median_abs'])} / {h(c['zero_wait_p90_abs'])}")
    print(f"  median recorded wait ({h(c['median_recorded_wait'])}): "
          f"{h(c['median_recorded_median_abs'])} / {h(c['median_recorded_p90_abs'])}")
    if c["left_out"]:
        print(f"  left out: {c['left_out']:.0f} jobs without a recorded or a simulated start")
    if c["unknown_runtime"]:
        print(f"  unknown run time (-1): {c['unknown_runtime']:.0f} jobs ran on the real "
              "machine but are not simulated (their load is missing, so simulated waits "
              "lean short)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    names = ", ".join(t.name for t in bundled_traces()) or "none"
    p.add_argument("--format", choices=list(FORMATS),
                   help="FILE is a workload trace: SWF, GPU-cluster CSV (layout read from "
                        "its header: Helios/Venus, Alibaba PAI 2020, openb 2023, spot-GPU "
                        "2026, generic) or Philly JSON; default: from the suffix (.swf .csv "
                        f".json). A bundled trace by name, e.g. nasa-ipsc ({names})")
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
    p.add_argument("--columns", metavar="FIELD=COLUMN,...",
                   help="for CSV traces: the column of each field (id, team, user, gpus, "
                        "submit, start, end, duration, status, qos, gpu_type, workers, "
                        "gpu_milli), e.g. id=job_name,team=organization,gpus=gpu_request")
    p.add_argument("--nodes-file", metavar="CSV",
                   help="for GPU traces: the cluster's nodes (node_name, gpu_model, "
                        "gpu_capacity_num, cpu_num: Alibaba's node_info_df); GPU models "
                        "stay typed")
    p.add_argument("--compare-recorded", action="store_true",
                   help="for traces with recorded waits: per-job error of the simulated "
                        "waits, beside zero-wait and median-wait predictors")
    p.add_argument("--record", metavar="FILE", help="for traces: write a recording")
    p.add_argument("--frames", type=number(1, MAX_FRAMES, integer=True), default=500,
                   help="frames in --record")
    p.add_argument("--json", action="store_true", help="for traces: metrics as one JSON line")


def record(trace: Trace, starts: list[float], path: str, *, frames: int = 500) -> int:
    """Write ``frames`` snapshots evenly over the simulated span."""
    from quotatop.collectors.model import PENDING, RUNNING, Job, Node, Snapshot, Team
    from quotatop.recording.store import Recorder, RecordingError

    (res, cap), = trace.capacity.items()
    t0 = min(tj.submit_time for tj in trace.jobs)
    t1 = max((s + tj.duration for tj, s in zip(trace.jobs, starts, strict=True)
              if math.isfinite(s)), default=t0)
    teams = sorted({tj.team for tj in trace.jobs})
    step = max((t1 - t0) / max(frames - 1, 1), 1e-9)
    order = sorted(range(len(starts)), key=lambda i: trace.jobs[i].job.submit_time)
    try:
        rec = Recorder(path, cluster=trace.path, source=f"trace:{trace.format}",
                       version=__version__).start()
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
    except RecordingError as e:  # a full disk: one line; stop() keeps what was written
        raise UserError(str(e)) from None
    finally:
        rec.stop()
    return n
