"""Speed of the scheduling core's predict, in one run.

Prints, for 1k/10k/50k pending jobs on 100/500/2,000 nodes of 8 GPUs (every
node busy with running jobs): the crossing cost (msgspec encode of the
snapshot + decode of the predictions), the core's predict time, the total, the
speed-up over the pure-Python reference (tests/reference) on the sizes it can
finish, and the growth in jobs against n·log n.
Usage: python bench/core.py [--reference-max-jobs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reference import core as ref

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot, Team

NOW = 1.7e9
JOBS = (1_000, 10_000, 50_000)
NODES = (100, 500, 2_000)


def make_snapshot(pending: int, n_nodes: int) -> Snapshot:
    teams = [Team(name=f"team{i}", max={"gpu": n_nodes * 8 / 10}) for i in range(20)]
    nodes = [Node(name=f"gpu{i:04d}", capacity={"cpu": 64, "memory": 1_000_000, "gpu": 8})
             for i in range(n_nodes)]
    jobs = []
    for i in range(n_nodes):  # two 4-GPU jobs on every node, ending at different times
        for k in range(2):
            jobs.append(Job(id=f"r{i}-{k}", team=f"team{(i + k) % 20}", state="running",
                            request={"cpu": 8, "memory": 64000, "gpu": 4}, nodes=[f"gpu{i:04d}"],
                            start_time=NOW - 600, time_limit=1800.0 * (1 + (i * 7 + k) % 24)))
    for i in range(pending):
        jobs.append(Job(id=str(100000 + i), user=f"u{i % 97}", team=f"team{i % 20}",
                        request={"cpu": 8, "memory": 64000, "gpu": float(1 + i % 8)},
                        time_limit=3600.0 * (1 + i % 24), submit_time=NOW - i))
    return Snapshot(cluster="bench", taken_at=NOW, nodes=nodes, teams=teams, jobs=jobs)


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference-max-jobs", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--placement", default="best_fit",
                    choices=["best_fit", "spread", "consecutive"],
                    help="node choice; consecutive is what site_policy sets for Slurm cons_tres "
                         "(the reference implements best_fit only, so it is skipped otherwise)")
    args = ap.parse_args()
    policy = scheduler_core.Policy(placement=args.placement)
    pol = msgspec.msgpack.encode(policy)
    ref_policy = msgspec.to_builtins(policy)
    horizon = 86400.0
    decoder = msgspec.msgpack.Decoder(list[scheduler_core.Prediction])
    print(f"predict, horizon {horizon:.0f} s, policy: backfill={policy.backfill}, "
          f"placement={policy.placement}; best of {args.repeat}")
    print("encode: snapshot to msgpack; core: predict_msgpack (GIL released); decode: all rows "
          "to list[Prediction]; lazy: predict_batch's wrap (rows decoded when read)")
    print(f"{'pending':>8} {'nodes':>6} {'encode':>8} {'core':>9} {'decode':>8} {'total':>9}"
          f" {'lazy':>7} {'total*':>9} {'started':>8} {'reference':>10} {'speed-up':>9}")
    core_ms: dict[tuple[int, int], float] = {}
    totals_lazy: dict[tuple[int, int], float] = {}
    for n_jobs in JOBS:
        for n_nodes in NODES:
            snap = make_snapshot(n_jobs, n_nodes)
            data = msgspec.msgpack.encode(snap)
            enc = best(lambda s=snap: msgspec.msgpack.encode(s), args.repeat)
            out = scheduler_core.predict_msgpack(data, pol, horizon)
            core = best(lambda d=data: scheduler_core.predict_msgpack(d, pol, horizon), args.repeat)
            dec = best(lambda o=out: decoder.decode(o), args.repeat)
            rows = scheduler_core.predict_rows_msgpack(data, pol, horizon)
            lazy = best(lambda r=rows: scheduler_core.PredictionBatch(*r), args.repeat)
            total_lazy = enc + core + lazy
            preds = decoder.decode(out)
            started = sum(1 for p in preds if p.start is not None)
            total = enc + core + dec
            core_ms[(n_jobs, n_nodes)] = core
            ref_txt, ratio_txt = "-", "-"
            if (n_jobs <= args.reference_max_jobs and n_nodes <= 100
                    and args.placement == "best_fit"):
                builtins = msgspec.to_builtins(snap)
                ref_ms = best(lambda b=builtins: ref.predict(b, ref_policy, horizon), 1)
                got = {p.job_id: (p.start, p.nodes) for p in preds}
                assert got == ref.predict(builtins, ref_policy, horizon), "core != reference"
                ref_txt, ratio_txt = f"{ref_ms:8.0f}ms", f"{ref_ms / total:8.0f}x"
            print(f"{n_jobs:>8} {n_nodes:>6} {enc:6.1f}ms {core:7.1f}ms {dec:6.1f}ms "
                  f"{total:7.1f}ms {lazy:5.2f}ms {total_lazy:7.1f}ms {started:>8} {ref_txt:>10} "
                  f"{ratio_txt:>9}")
            totals_lazy[(n_jobs, n_nodes)] = total_lazy
    print("\ngrowth in jobs (core time, 2,000 nodes) against n·log n:")
    base_n = JOBS[0]
    base = core_ms[(base_n, NODES[-1])]
    for n in JOBS:
        t = core_ms[(n, NODES[-1])]
        nlogn = (n * math.log(n)) / (base_n * math.log(base_n))
        print(f"  {n:>6} jobs: x{t / base:6.2f} time   x{nlogn:6.2f} n·log n   "
              f"{'ok' if t / base <= nlogn * 1.5 else 'FASTER THAN n log n'}")
    target = core_ms[(JOBS[-1], NODES[-1])]
    whole = totals_lazy[(JOBS[-1], NODES[-1])]
    print(f"\n50k jobs x 2,000 nodes: core {target:.1f} ms, with crossing (lazy) {whole:.1f} ms "
          f"(target <= 100 ms incl. crossing: {'met' if whole <= 100 else 'NOT met'})")
    print("total* = encode + core + lazy wrap; speed-up = reference / total (list decode)")
    windows_bench(policy, args.repeat)


WINDOW_JOBS, WINDOW_NODES = 5_000, 500


def with_history(snap: Snapshot) -> Snapshot:
    """Every job given an estimate and a few past runs below its limit, as the Slurm
    collector gives them (collectors/slurm/runtimes.py): what windows sample from."""
    jobs = []
    for i, j in enumerate(snap.jobs):
        limit = j.time_limit or 3600.0
        runs = [limit * (0.3 + 0.1 * ((i + k) % 6)) for k in range(4)]
        jobs.append(msgspec.structs.replace(j, runtime_estimate=sum(runs) / len(runs),
                                            runtime_basis="bench", runtime_history=runs))
    return msgspec.structs.replace(snap, jobs=jobs)


def windows_bench(policy: scheduler_core.Policy, repeat: int) -> None:
    """predict_windows on a 5k-job queue: the plan made once per sample, so the time
    is about samples x one plan; quotatop predict's default --samples must keep it
    within 1 s (issue #31)."""
    snap = with_history(make_snapshot(WINDOW_JOBS, WINDOW_NODES))
    # quotatop predict's default for this queue (pending and running jobs).
    default = scheduler_core.auto_samples(
        sum(1 for j in snap.jobs if j.state in ("pending", "running")))
    data = msgspec.msgpack.encode(snap)
    est = msgspec.msgpack.encode(msgspec.structs.replace(policy, runtimes="estimate"))
    one = best(lambda: scheduler_core.predict_msgpack(data, est, 86400.0), repeat)
    print(f"\nstart windows, {WINDOW_JOBS} pending x {WINDOW_NODES} nodes "
          f"(runtimes=estimate, with history); one plan {one:.1f} ms")
    for samples in sorted({8, 16, 32, 64, default}):
        ms = best(lambda n=samples: scheduler_core.predict_windows(snap, est, 86400.0, n), repeat)
        mark = " (predict's default)" if samples == default else ""
        print(f"  {samples:>3} samples: {ms:7.1f} ms, x{ms / one:5.1f} one plan{mark}")
    ms = best(lambda: scheduler_core.predict_windows(snap, est, 86400.0, default), repeat)
    print(f"windows at the default {default} samples: {ms:.0f} ms "
          f"(target <= 1000 ms: {'met' if ms <= 1000 else 'NOT met'})")


if __name__ == "__main__":
    main()
