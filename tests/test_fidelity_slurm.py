"""Fidelity against the real Slurm: what quotatop predicts against what Slurm does.

A fresh cluster of tests/harness plays a workload that a seed makes
(tests/harness/workload_gen.py): one fixed seed, and one fresh seed each run, printed
and played again with ``QUOTATOP_FIDELITY_SEED=S``. Nobody chose either for its
score. ``quotatop predict --source slurm --json`` and Slurm's ``squeue --start`` are
taken at one moment, then every job's actual start and end are read from sacct.

What is asserted is what holds on every seed the code has met so far: every pending
job has a start or a stated reason, no preemption is predicted now that Slurm did not
make, the start order agrees far better than Slurm's own estimate and no worse than
the floor below, and the start windows hold the actual starts about as often as the
floor says, over the pooled jobs of both seeds. These floors are what the model earns
today (issue #31 gives the figures), not its targets: tau >= 0.8 on every seed and
75-90 % of starts inside [p10, p90] are not met yet, and raising a floor waits for the
code that earns it. The figures a seed gives (tau, errors, the oracle with true run
times) are bench/fidelity.py's to print; each observation is kept, whatever the
outcome, in the directory named on stderr."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.fidelity import (
    Calibration,
    Observation,
    Scores,
    calibration,
    evidence_dir,
    keep,
    quotatop_scores,
    run_workload,
    slurm_scores,
    worst,
)
from harness.fixtures import fresh_cluster
from harness.workload_gen import generate

# Fixed: the same workload every run, to compare runs by. Its figures are not the
# reason it was picked: it is the first seed this test ever drew.
FIXED_SEED = 84213259


def _fresh_seed() -> int:
    stated = os.environ.get("QUOTATOP_FIDELITY_SEED", "").strip()
    if stated:
        try:
            return int(stated)
        except ValueError:
            raise pytest.UsageError(
                f"QUOTATOP_FIDELITY_SEED must be a whole number, not {stated!r}") from None
    return secrets.randbelow(2**31)


SEEDS = {"fixed": FIXED_SEED, "fresh": _fresh_seed()}
# Printed at collection, so that a run cut off by a timeout still says what it played.
print(f"fidelity seeds: fixed {SEEDS['fixed']}, fresh {SEEDS['fresh']} "
      f"(QUOTATOP_FIDELITY_SEED={SEEDS['fresh']} plays the fresh one again)", file=sys.stderr)

# Both seeds' workloads run at once, each on a cluster of its own (their jobs sleep:
# the two clusters barely share the machine), and take 12-20 minutes together here.
pytestmark = pytest.mark.timeout(2400)


def _play(name: str, seed: int) -> Observation:
    workload = generate(seed)
    print(f"fidelity seed {seed} ({name}): {workload.describe()}", file=sys.stderr)
    with fresh_cluster(f"fidelity seed {seed}") as cluster:
        obs = run_workload(cluster, workload, wait_ends=False,
                           log=lambda s: print(f"seed {seed}: {s}", file=sys.stderr))
        # Kept whatever the outcome (a few hundred kB): a miss can be read afterwards
        # with the controller's own log, which goes with the cluster's directory.
        dest = evidence_dir(f"fidelity-{seed}")
        keep(obs, cluster, dest)
        print(f"fidelity seed {seed}: observation and slurmctld log kept in {dest}",
              file=sys.stderr)
    return obs


@pytest.fixture(scope="module")
def observations() -> dict[str, Observation]:
    with ThreadPoolExecutor(len(SEEDS)) as pool:
        futures = {name: pool.submit(_play, name, seed) for name, seed in SEEDS.items()}
        # A seed's failure (its cluster did not start, a job never ran) is raised here,
        # after the other has finished and stopped its cluster.
        return {name: f.result() for name, f in futures.items()}


@pytest.fixture(scope="module", params=list(SEEDS), ids=list(SEEDS))
def observed(request: pytest.FixtureRequest,
             observations: dict[str, Observation]) -> Iterator[Observation]:
    obs = observations[request.param]
    yield obs


def _why(obs: Observation, *scores: Scores) -> str:
    return "\n".join([f"seed {obs.seed} (QUOTATOP_FIDELITY_SEED={obs.seed} plays it again; "
                      f"kept in {obs.kept})", *(s.row() for s in scores), worst(obs)])


def test_every_pending_job_has_a_start_or_a_stated_reason(observed: Observation) -> None:
    rows = observed.predicted["estimate"]
    assert len(observed.jobs) >= 20, _why(observed)  # the queue really queued
    for job_id in observed.jobs:
        row = rows[job_id]
        assert row["predicted_start"] is not None or row["reason"], row
    ours = quotatop_scores(observed, "estimate")
    assert ours.with_start == ours.measured, _why(observed, ours)


def test_no_predicted_preemption_that_slurm_did_not_make(observed: Observation) -> None:
    """Preemptions the prediction makes at the snapshot's moment (a job that starts now
    by preempting) must be ones Slurm made. One predicted for later hangs on which of
    two nearly simultaneous job ends comes first, as start times do; bench/fidelity.py
    prints those beside Slurm's."""
    rows = observed.predicted["estimate"]
    now = {p["job_id"] for r in rows.values() if r["state"] == "starts_now"
           for p in r["preempts"]}
    assert now <= observed.preempted, _why(observed)


def test_start_order_agrees_with_slurm(observed: Observation) -> None:
    ours = quotatop_scores(observed, "estimate")
    slurm = slurm_scores(observed)
    print(ours.row(), slurm.row(), sep="\n", file=sys.stderr)
    assert ours.tau >= TAU_FLOOR, _why(observed, ours, slurm)
    assert ours.tau >= slurm.tau + TAU_OVER_SLURM, _why(observed, ours, slurm)


def test_start_error_is_no_worse_than_slurms_own(observed: Observation) -> None:
    # On the jobs for which Slurm itself gave an estimate.
    same = [i for i in observed.jobs if i in observed.slurm_start]
    assert len(same) >= 10, _why(observed)
    ours = quotatop_scores(observed, "estimate", same)
    slurm = slurm_scores(observed, same)
    assert ours.p90_err <= slurm.p90_err, _why(observed, ours, slurm)


def test_start_windows_hold_the_actual_starts_as_often_as_they_say(
        observed: Observation) -> None:
    """[p10, p90] is meant as an 80 % window (one seed's ~28 jobs: 80 +- 15 % for a
    calibrated one, two standard errors). Today it holds 50-67 %: the windows sample
    run times, and the rest of the miss is the model's (the oracle misses those jobs
    too). So each seed is held to the loose floor below, the pooled jobs to another."""
    own = calibration(observed, observed.predicted["estimate"])
    print(f"seed {observed.seed}: {own.row()}", file=sys.stderr)
    assert own.measured >= 20, _why(observed)
    assert SEED_CALIBRATION[0] <= own.inside / own.measured <= SEED_CALIBRATION[1], \
        f"{own.row()}\n{_why(observed)}"


def test_start_windows_over_the_pooled_jobs(observations: dict[str, Observation]) -> None:
    cals = {o.seed: calibration(o, o.predicted["estimate"]) for o in observations.values()}
    pooled = Calibration(sum(c.inside for c in cals.values()),
                         sum(c.measured for c in cals.values()), float("nan"),
                         sum(c.early for c in cals.values()), sum(c.late for c in cals.values()))
    print(f"pooled: {pooled.row()}", file=sys.stderr)
    why = "\n".join([pooled.row(), *(f"seed {seed}: {c.row()}" for seed, c in cals.items())])
    share = pooled.inside / max(pooled.measured, 1)
    assert CALIBRATION[0] <= share <= CALIBRATION[1], why


# Floors from the generated workloads measured on 2026-12-06 (bench/fidelity.py, seeds
# 1443346575 and 1345822020): tau 0.85 and 0.72 against Slurm's own 0.33 and -0.29;
# windows held 14 of 28 and 18 of 27 actual starts. The targets are tau >= 0.8
# on every seed (median 0.9) and 75-90 % inside: not met, and these floors only keep
# what is earned from slipping back; the upper bound says a window is not so wide that
# it says nothing.
TAU_FLOOR = 0.5
TAU_OVER_SLURM = 0.2
CALIBRATION = (0.4, 0.97)
SEED_CALIBRATION = (0.3, 1.0)
