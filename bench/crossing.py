"""How much it costs a snapshot to cross from Python into the Rust core.

Prints the time to encode a snapshot with msgspec msgpack and decode it in
Rust the lean way the core does (borrowed names, resources in a fixed vector),
against two references measured in the same run: the full owned serde mirror
(a String and a BTreeMap per job, the decode the core used before) and turning
the snapshot into per-job Python dicts (what a binding taking Python objects
would need).
Usage: python bench/crossing.py [--jobs 50000] [--nodes 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import msgspec

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot, Team, to_msgpack
from quotatop.scheduler_core import _core


def make_snapshot(n_jobs: int, n_nodes: int) -> Snapshot:
    teams = [Team(name=f"team{i}", max={"gpu": 64.0}, guarantee={"gpu": 32.0}) for i in range(20)]
    nodes = [Node(name=f"gpu{i:04d}", capacity={"cpu": 64, "memory": 1_000_000, "gpu": 8,
                                               "gpu:h100": 8}, gpu_type="h100")
             for i in range(n_nodes)]
    jobs = [Job(id=str(100000 + i), user=f"u{i % 97}", team=f"team{i % 20}",
                state="pending" if i % 3 else "running",
                request={"cpu": 8, "memory": 64000, "gpu": float(1 + i % 8)},
                time_limit=3600.0 * (1 + i % 24), submit_time=1.7e9 + i,
                nodes=[] if i % 3 else [f"gpu{i % n_nodes:04d}"])
            for i in range(n_jobs)]
    return Snapshot(cluster="bench", source="bench", taken_at=1.7e9, nodes=nodes, teams=teams,
                    jobs=jobs)


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000, statistics.median(times) * 1000  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50_000)
    ap.add_argument("--nodes", type=int, default=2_000)
    args = ap.parse_args()
    snap = make_snapshot(args.jobs, args.nodes)
    data = to_msgpack(snap)
    enc_best, enc_med = best_of(lambda: to_msgpack(snap))
    dec_best, dec_med = best_of(lambda: scheduler_core.snapshot_stats(data))
    own_best, own_med = best_of(lambda: _core.snapshot_stats_owned(data))
    ref_best, ref_med = best_of(lambda: msgspec.to_builtins(snap))
    crossing = enc_best + dec_best
    print(f"snapshot: {args.jobs} jobs, {args.nodes} nodes, {len(data) / 1e6:.1f} MB msgpack")
    print(f"encode (msgspec msgpack)      best {enc_best:8.1f} ms  median {enc_med:8.1f} ms")
    print(f"decode (lean, in Rust)        best {dec_best:8.1f} ms  median {dec_med:8.1f} ms")
    print(f"reference: owned serde decode best {own_best:8.1f} ms  median {own_med:8.1f} ms")
    print(f"crossing total                best {crossing:8.1f} ms")
    print(f"reference: per-job dicts      best {ref_best:8.1f} ms  median {ref_med:8.1f} ms")
    print(f"ratio owned / lean decode     {own_best / dec_best:8.2f}x")
    print(f"ratio dicts / crossing        {ref_best / crossing:8.2f}x")


if __name__ == "__main__":
    main()
