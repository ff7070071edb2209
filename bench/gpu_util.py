"""The GPU utilization join (collectors/gpu_util.py) at size: 10k jobs over 2,000 GPUs.

250 nodes of 8 GPUs; jobs of 1, 2, 4 or 8 GPUs one after another on each GPU over the
hour (so most GPUs change hands), an hour of utilization and framebuffer samples per GPU
at ``--step`` seconds (DCGM through a Prometheus range query). Prints ms per join, the
median of ``--rounds`` (target: <= 200 ms per refresh), wall and CPU time (the CPU
time is the honest one on a machine another load shares).

    python bench/gpu_util.py [--jobs 10000] [--gpus 2000] [--step 60] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from quotatop.collectors.gpu_util import FB, UTIL, GpuSeries, join_gpu_util
from quotatop.collectors.model import Job

HOUR = 3600.0


def workload(n_jobs: int, n_gpus: int, step: float,
             seed: int = 1) -> tuple[list[Job], list[GpuSeries]]:
    rng = random.Random(seed)
    nodes = [f"gpu{i:04d}" for i in range(n_gpus // 8)]
    jobs: list[Job] = []
    # Each node's 8 GPUs are cut into jobs in turn until n_jobs are placed: a job takes
    # a run of GPUs of one node for a slice of the hour.
    per_node = max(1, n_jobs // len(nodes))
    for ni, node in enumerate(nodes):
        for k in range(per_node if ni < len(nodes) - 1 else n_jobs - len(jobs)):
            width = rng.choice((1, 2, 4, 8))
            first = rng.randrange(0, 9 - width)
            start = (k * HOUR) / per_node
            jobs.append(Job(id=f"{ni}_{k}", user="u", team=f"t{ni % 20}", state="running",
                            start_time=start, end_time=start + HOUR / per_node,
                            gpus={node: list(range(first, first + width))},
                            request={"gpu": float(width)}))
    times = [i * step for i in range(int(HOUR / step) + 1)]
    series: list[GpuSeries] = []
    for node in nodes:
        for g in range(8):
            base = rng.uniform(0, 100)
            series.append(GpuSeries(UTIL, node, g, [(t, base) for t in times]))
            series.append(GpuSeries(FB, node, g, [(t, base * 800) for t in times]))
    return jobs, series


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--gpus", type=int, default=2_000)
    ap.add_argument("--step", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    jobs, series = workload(args.jobs, args.gpus, args.step)
    points = sum(len(s.points) for s in series)
    took, cpu = [], []
    for _ in range(args.rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        out, warnings = join_gpu_util(jobs, series, since=0.0, until=HOUR,
                                      max_hold=2 * args.step)
        took.append((time.perf_counter() - t0) * 1000.0)
        cpu.append((time.process_time() - c0) * 1000.0)
    assert not warnings, warnings[:3]
    print(f"{len(jobs)} jobs, {args.gpus} GPUs, {points} points, {len(out)} results: "
          f"join median {statistics.median(took):.0f} ms, worst {max(took):.0f} ms "
          f"(CPU median {statistics.median(cpu):.0f} ms; target <= 200 ms)")


if __name__ == "__main__":
    main()
