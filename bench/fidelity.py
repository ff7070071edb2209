"""Fidelity against a real Slurm 22.05 (tests/harness): one controlled workload,
quotatop's predictions (with time limits, and with runtimes from history) and Slurm's
own ``squeue --start`` taken at one moment, then the actual starts from sacct.

    .venv/bin/python bench/fidelity.py [--runs N] [--dump PREFIX] [--preemption]

Prints per run: Kendall tau of predicted vs actual start order, median / p90 absolute
start error, coverage, node set right; each against Slurm's own estimate on the same
jobs. With --preemption, then the preemption scenario on a fresh cluster: the job that
quotatop predicts will preempt, whom, and when, against what Slurm does. Needs root and
the Debian Slurm packages (scripts/install-system-deps.sh)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the harness lives with the tests

from harness.fidelity import (  # noqa: E402
    observation_json,
    placement_at_start,
    quotatop_scores,
    run_workload,
    slurm_scores,
)
from harness.preemption import run_preemption  # noqa: E402
from harness.slurm_cluster import SlurmCluster  # noqa: E402
from harness.workload_timing import Template, stability  # noqa: E402


def main() -> int:
    # A TERM (timeout, kill) unwinds through the cluster's `with`, which stops its daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1, help="workloads, each on a fresh cluster")
    ap.add_argument("--dump", help="write each run's observations (JSON) to this path prefix")
    ap.add_argument("--preemption", action="store_true",
                    help="also run the preemption scenario (tests/harness/preemption.py)")
    args = ap.parse_args()
    # The workload itself: how far its start order moves with 0-2 s of timing alone
    # (tests/harness/workload_timing.py), so that a low tau below is read rightly.
    held = stability(Template())
    print(f"workload: start order under 0-2 s of runtime jitter, tau lowest {held.lowest:.3f}"
          f" / p10 {held.p10:.3f} / mean {held.mean:.3f} over 200 draws (core as the model)")
    for run in range(1, args.runs + 1):
        t0 = time.monotonic()
        with SlurmCluster() as cluster:
            obs = run_workload(cluster, log=lambda s: print(f"  {s}", file=sys.stderr),
                               keep_snapshot=True)
        if args.dump:
            Path(f"{args.dump}{run}.json").write_text(observation_json(obs))
        slurm = slurm_scores(obs)
        both = [i for i in obs.jobs if i in obs.slurm_start]
        rows = [quotatop_scores(obs, "limit"), quotatop_scores(obs, "estimate"), slurm]
        same = [quotatop_scores(obs, "limit", both), quotatop_scores(obs, "estimate", both),
                slurm_scores(obs, both)]
        print(f"run {run}: {len(obs.jobs)} jobs pending at the prediction, "
              f"{time.monotonic() - t0:.0f} s (predict: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in obs.seconds.items()
                          if k.startswith("predict")) + ")")
        print("| predictor | Kendall tau | median / p90 abs start error | with a start "
              "| node set right |")
        print("|---|---|---|---|---|")
        for s in rows:
            print(s.row())
        print(f"on the {len(both)} jobs that Slurm gave an estimate:")
        for s in same:
            print(s.row())
        pred = quotatop_scores(obs, "estimate").preemptions
        print(f"preemptions: quotatop predicted {sorted(pred)}, Slurm made "
              f"{sorted(obs.preempted)}; predicted but not made: {sorted(pred - obs.preempted)}")
        for rule in ("consecutive", "best_fit"):
            right, measured = placement_at_start(obs, rule)
            print(f"node set right given the state at each actual start ({rule}): "
                  f"{right} of {measured}")
        print(f"coverage (start or stated reason): "
              f"{quotatop_scores(obs, 'estimate').covered} of {len(obs.jobs)}")
    if args.preemption:
        with SlurmCluster() as cluster:
            run_preemption(cluster, log=lambda s: print(f"preemption scenario: {s}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
