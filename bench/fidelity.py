"""Fidelity against a real Slurm 22.05 (tests/harness), on generated workloads.

    .venv/bin/python bench/fidelity.py [--seeds N | --seed S ...] [--dump PREFIX] [--preemption]

Each seed makes a workload (tests/harness/workload_gen.py) on a fresh cluster; fresh
seeds are drawn at random and printed (``--seed S`` plays one again). Never choose or
filter seeds by their score: the distribution over seeds is the figure.

Prints per seed, on the jobs pending at the prediction: Kendall tau of predicted vs
actual start order, median / p90 absolute start error, coverage and node sets right,
for quotatop with time limits, with runtimes from history (what ``quotatop predict``
gives), the oracle (the same moment re-predicted with every job's true run time from
sacct: the model's own error), and Slurm's own ``squeue --start``; the calibration of
the start windows (share of actual starts inside [p10, p90], median width); the
preemptions predicted that Slurm did not make. Then the distribution over the seeds.
With --preemption, the preemption scenario on a fresh cluster too. Needs root and the
Debian Slurm packages (scripts/install-system-deps.sh)."""

from __future__ import annotations

import argparse
import secrets
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the harness lives with the tests

from harness.fidelity import (  # noqa: E402
    Calibration,
    Observation,
    Scores,
    calibration,
    median_scores,
    observation_json,
    oracle_jobs,
    oracle_rows,
    quotatop_scores,
    rows_scores,
    run_workload,
    slurm_scores,
)
from harness.preemption import run_preemption  # noqa: E402
from harness.slurm_cluster import SlurmCluster  # noqa: E402
from harness.workload_gen import generate  # noqa: E402


def report(obs: Observation) -> dict[str, Scores | Calibration | int]:
    """Print one seed's table; return its figures for the summary."""
    estimate = quotatop_scores(obs, "estimate")
    oracle_ids = oracle_jobs(obs)
    oracle = rows_scores("quotatop, true run times (oracle)", obs, oracle_rows(obs), oracle_ids)
    slurm = slurm_scores(obs)
    median = median_scores(obs)
    print("| predictor | Kendall tau | median / p90 abs start error | with a start "
          "| node set right |")
    print("|---|---|---|---|---|")
    for s in (quotatop_scores(obs, "limit"), estimate, median, oracle, slurm):
        print(s.row())
    both = [i for i in obs.jobs if i in obs.slurm_start]
    print(f"on the {len(both)} jobs that Slurm gave an estimate:")
    ours_same, slurm_same = quotatop_scores(obs, "estimate", both), slurm_scores(obs, both)
    for s in (ours_same, slurm_same):
        print(s.row())
    cal = calibration(obs, obs.predicted["estimate"])
    print(f"start windows: {cal.row()}")
    false = estimate.preemptions - obs.preempted
    print(f"preemptions: quotatop predicted {sorted(estimate.preemptions)}, Slurm made "
          f"{sorted(obs.preempted)}; predicted but not made: {sorted(false)}")
    print(f"coverage (start or stated reason): {estimate.covered} of {len(obs.jobs)}")
    return {"estimate": estimate, "median": median, "oracle": oracle, "slurm": slurm,
            "ours_same": ours_same, "slurm_same": slurm_same, "calibration": cal,
            "false_preemptions": len(false)}


def summary(figures: list[dict]) -> None:
    if not figures:
        return

    def dist(xs: list[float]) -> str:
        # A tau is undefined (nan) where one ranking is all ties (Slurm's own estimate
        # giving every job one time); a nan would make the median and sort meaningless.
        undefined = sum(1 for x in xs if x != x)
        xs = sorted(x for x in xs if x == x)
        if not xs:
            return f"undefined on all {undefined} seeds"
        return (f"median {statistics.median(xs):.2f}, min {xs[0]:.2f}, max {xs[-1]:.2f}"
                f" ({', '.join(f'{x:.2f}' for x in xs)})"
                + (f"; undefined on {undefined} (one ranking all ties)" if undefined else ""))

    print(f"\nover {len(figures)} seeds:")
    print(f"  tau, history runtimes: {dist([f['estimate'].tau for f in figures])}")
    print(f"  tau, window median (p50): {dist([f['median'].tau for f in figures])}")
    print(f"  tau, true run times (oracle): {dist([f['oracle'].tau for f in figures])}")
    print(f"  tau, Slurm's own: {dist([f['slurm'].tau for f in figures])}")
    print(f"  p90 error, history runtimes: {dist([f['estimate'].p90_err for f in figures])}")
    print(f"  p90 error, window median: {dist([f['median'].p90_err for f in figures])}")
    print(f"  p90 error, oracle: {dist([f['oracle'].p90_err for f in figures])}")
    print("  p90 error vs Slurm's own on the jobs it estimated: "
          + ", ".join(f"{f['ours_same'].p90_err:.0f}/{f['slurm_same'].p90_err:.0f} s"
                      for f in figures))
    cals = [f["calibration"] for f in figures]
    inside, measured = sum(c.inside for c in cals), sum(c.measured for c in cals)
    print(f"  start windows: {inside} of {measured} actual starts inside [p10, p90] "
          f"({100 * inside / max(measured, 1):.0f} %), median width per seed "
          + ", ".join(f"{c.width_median:.0f}" for c in cals) + " s")
    print(f"  coverage: {sum(f['estimate'].covered for f in figures)} of "
          f"{sum(f['estimate'].measured for f in figures)}; preemptions predicted but not "
          f"made: {sum(f['false_preemptions'] for f in figures)}")


def main() -> int:
    # A TERM (timeout, kill) unwinds through the cluster's `with`, which stops its daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1, help="fresh random seeds to run")
    ap.add_argument("--seed", type=int, action="append",
                    help="play this seed (repeatable) instead of fresh ones")
    ap.add_argument("--dump", help="write each seed's observation (JSON) to PREFIX<seed>.json")
    ap.add_argument("--preemption", action="store_true",
                    help="also run the preemption scenario (tests/harness/preemption.py)")
    args = ap.parse_args()
    seeds = args.seed or [secrets.randbelow(2**31) for _ in range(args.seeds)]
    print(f"seeds: {' '.join(map(str, seeds))}")
    figures = []
    for seed in seeds:
        t0 = time.monotonic()
        workload = generate(seed)
        print(f"\n{workload.describe()}", flush=True)
        with SlurmCluster() as cluster:
            obs = run_workload(cluster, workload,
                               log=lambda s: print(f"  {s}", file=sys.stderr, flush=True))
        if args.dump:
            Path(f"{args.dump}{seed}.json").write_text(observation_json(obs))
        print(f"seed {seed}: {len(obs.jobs)} jobs pending at the prediction, "
              f"{time.monotonic() - t0:.0f} s (predict: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in obs.seconds.items()
                          if k.startswith("predict")) + ")")
        figures.append(report(obs))
        sys.stdout.flush()
    summary(figures)
    if args.preemption:
        with SlurmCluster() as cluster:
            run_preemption(cluster, log=lambda s: print(f"preemption scenario: {s}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
