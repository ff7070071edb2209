"""Quota advisor sweep speed (``quotatop advise``, quotatop/review/advise.py).

The workload: the largest real trace shipped (demo_data/traces/NASA-iPSC-1993-3.1-cln.swf,
18,239 jobs over 92 days, see ../shared/traces/README.md; no 100k-job trace is shipped),
looped end to end (copy k is shifted by k × the trace's span, its jobs renamed
``<id>@k``; no record otherwise changed) until it holds ``--jobs`` jobs, 100k by default:
6 copies, 109,434 jobs over about 18 months, not one month (the real log has about 6k
jobs a month). Teams by user (69), so there are enough distinct candidates.

It times a sweep of ``--candidates`` candidates (100 by default) on a local process pool
of 1 and of 2 workers, and prints the wall time of each, the time per candidate and the
speed-up per added worker. Reference in the same run: one simulation in this process
(the pool's lower bound per candidate), and the 1-worker pool.
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
from quotatop.trace_simulate import TRACE_DIR, cluster_shape, load_trace

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--resolution", type=float, default=1.0)
    ap.add_argument("--policy", default="multifactor")
    a = ap.parse_args()

    t = time.perf_counter()
    trace, copies = looped(TRACE, a.jobs)
    nodes, per = cluster_shape(trace)
    wl = adv.build_workload(trace, nodes, per, a.policy, a.resolution)
    cands = adv.candidates(wl, limit=a.candidates)
    days = (max(s + d for s, d in zip(wl.submit, wl.duration, strict=True))
            - min(wl.submit)) / 86400
    print(f"workload: {TRACE.name} looped {copies}×: {len(wl.submit):,} jobs, "
          f"{len(wl.teams)} teams, {days:,.0f} days, {wl.capacity:g} {wl.resource}; "
          f"policy {a.policy}, resolution {a.resolution:g} s; built in "
          f"{time.perf_counter() - t:.1f} s")
    print(f"candidates: {len(cands)}; machine: {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the start")

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
          f"ideal 2.00×); results identical: {same}")
    # Other processes on the machine take cores from the pool: the speed-up means
    # something only when the load stayed below the CPU count.
    print("load average (1/5/15 min) at the end: "
          + " / ".join(f"{x:.1f}" for x in os.getloadavg()))
    print(f"100 candidates at the 2-worker rate: {walls[2] / len(cands) * 100:.0f} s")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
