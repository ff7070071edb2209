"""Quota advisor sweep speed (``quotatop advise``, review/advise.py).

The workload: the largest real trace shipped (demo_data/traces/NASA-iPSC-1993-3.1-cln.swf,
18,239 jobs over 92 days, see ../shared/traces/README.md; no 100k-job trace is shipped),
looped end to end (copy k is shifted by k × the trace's span, its jobs renamed
``<id>@k``) until it holds ``--jobs`` jobs, 100k by default: 6 copies, 109,434 jobs over
about 18 months. Then the clock is scaled so that they fit ``--days`` (30: a month):
submit times, run times, time limits and the scheduler's pass interval alike, so the
same jobs meet the same 128 nodes in the same order and the load is the log's (the real
log has about 6k jobs a month; a month of 100k jobs is a cluster ~18 times as busy in
jobs, not in load). Teams by user (69), so there are enough distinct candidates.

It times a sweep of ``--candidates`` candidates (100 by default) on a local process pool
of 1 and of 2 workers, and prints the wall time of each, the time per candidate and the
speed-up per added worker, with the machine's cores and its load (other processes take
cores from the pool). Reference in the same run: one simulation in this process (the
pool's lower bound per candidate).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec

from quotatop.review import advise as adv
from quotatop.simulation.trace_simulate import TRACE_DIR, cluster_shape, load_trace

TRACE = TRACE_DIR / "NASA-iPSC-1993-3.1-cln.swf"


def looped(path: Path, jobs: int) -> tuple[object, int]:
    """The trace repeated end to end until it has at least ``jobs`` jobs."""
    trace = load_trace(str(path), "swf", team_by="user")
    base = trace.jobs
    t0 = min(j.submit_time for j in base)
    span = max(j.submit_time + j.duration for j in base) - t0 + 1.0
    copies = max(1, math.ceil(jobs / len(base)))
    out = []
    for k in range(copies):
        shift = k * span
        for j in base:
            out.append(j if k == 0 else msgspec.structs.replace(
                j, id=f"{j.id}@{k}", submit_time=j.submit_time + shift,
                recorded_start=None if j.recorded_start is None else j.recorded_start + shift))
    trace.jobs = out
    return trace, copies


def scaled(trace: object, days: float) -> float:
    """Scale the trace's clock so that it spans ``days`` (submits, run times, limits);
    the factor applied."""
    jobs = trace.jobs  # type: ignore[attr-defined]
    t0 = min(j.submit_time for j in jobs)
    span = max(j.submit_time + j.duration for j in jobs) - t0
    k = days * 86400.0 / span
    r = msgspec.structs.replace
    trace.jobs = [r(j, submit_time=t0 + (j.submit_time - t0) * k,  # type: ignore[attr-defined]
                    duration=j.duration * k,
                    time_limit=None if j.time_limit is None else j.time_limit * k,
                    recorded_start=None if j.recorded_start is None
                    else t0 + (j.recorded_start - t0) * k) for j in jobs]
    return k


def cores() -> str:
    """"2 cores (2 logical CPUs, 2 usable by this process)"."""
    import psutil

    physical = psutil.cpu_count(logical=False)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return (f"{physical or '?'} cores ({os.cpu_count()} logical CPUs"
            + (f", {usable} usable by this process)" if usable is not None else ")"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--days", type=float, default=30.0,
                    help="the span the looped log is scaled to (default 30: a month)")
    ap.add_argument("--resolution", type=float, default=1.0,
                    help="seconds between scheduling passes in the log's own clock "
                         "(scaled with it)")
    ap.add_argument("--policy", default="multifactor")
    a = ap.parse_args()

    t = time.perf_counter()
    trace, copies = looped(TRACE, a.jobs)
    k = scaled(trace, a.days)
    resolution = a.resolution * k
    nodes, per = cluster_shape(trace)
    wl = adv.build_workload(trace, nodes, per, a.policy, resolution)
    cands = adv.candidates(wl, limit=a.candidates)
    days = (max(s + d for s, d in zip(wl.submit, wl.duration, strict=True))
            - min(wl.submit)) / 86400
    print(f"workload: {TRACE.name} looped {copies}×, clock scaled ×{k:.4f}: "
          f"{len(wl.submit):,} jobs over {days:,.1f} days on {nodes} nodes, "
          f"{wl.capacity:g} {wl.resource}, {len(wl.teams)} teams; policy {a.policy}, "
          f"passes every {resolution:.3g} s; built in {time.perf_counter() - t:.1f} s")
    print(f"candidates: {len(cands)}; this machine has {cores()}: 2 workers is the most "
          f"it runs in parallel; load average {os.getloadavg()[0]:.1f} at the start")

    t = time.perf_counter()
    one = adv.run_candidate(wl, cands[1])
    single = time.perf_counter() - t
    print(f"reference: one simulation in this process {single:.2f} s "
          f"({one.started:,} jobs started)")

    walls: dict[int, float] = {}
    results: dict[int, list[adv.Result]] = {}
    for workers in (1, 2):
        t = time.perf_counter()
        results[workers] = adv.sweep_local(wl, cands, workers)
        walls[workers] = time.perf_counter() - t
        print(f"{workers} worker{'s' if workers > 1 else ''}: {walls[workers]:.1f} s wall, "
              f"{walls[workers] / len(cands):.2f} s per candidate")
    same = results[1] == results[2]
    speedup = walls[1] / walls[2]
    print(f"speed-up 1 → 2 workers: {speedup:.2f}× ({speedup - 1:+.0%} for the added worker; "
          f"ideal 2.00× on {cores()}); results identical: {same}")
    # Other processes on the machine take cores from the pool: the speed-up means
    # something only when the load stayed below the CPU count.
    print("load average (1/5/15 min) at the end: "
          + " / ".join(f"{x:.1f}" for x in os.getloadavg()))
    if len(cands) != 100:
        print(f"100 candidates at the 2-worker rate: {walls[2] / len(cands) * 100:.0f} s")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
