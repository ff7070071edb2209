"""Fidelity against the real Slurm: what quotatop predicts against what Slurm does.

A fresh cluster of tests/harness plays a workload that a seed makes
(tests/harness/workload_gen.py): one fixed seed, and one fresh seed each run, printed
and played again with ``QUOTATOP_FIDELITY_SEED=S``. Nobody chose either for its
score. ``quotatop predict --source slurm --json`` and Slurm's ``squeue --start`` are
taken at one moment, then every job's actual start and end are read from sacct.

What is asserted is what holds on every seed (issue #31): every pending job has a
start or a stated reason, no preemption is predicted now that Slurm did not make, the
start order agrees with Kendall tau >= 0.8, and the start windows hold the actual
starts about as often as they say, over the pooled jobs of both seeds. The figures a
seed gives (tau, errors, the oracle with true run times) are bench/fidelity.py's to
print; each observation is kept, whatever the outcome, in the directory named on
stderr."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator

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

# The workload and the wait for every job to end take 5-9 minutes per seed here.
pytestmark = pytest.mark.timeout(1800)

_observed: dict[str, Observation] = {}


@pytest.fixture(scope="module", params=list(SEEDS), ids=list(SEEDS))
def observed(request: pytest.FixtureRequest) -> Iterator[Observation]:
    seed = SEEDS[request.param]
    workload = generate(seed)
    print(f"fidelity seed {seed} ({request.param}): {workload.describe()}", file=sys.stderr)
    with fresh_cluster("fidelity") as cluster:
        obs = run_workload(cluster, workload, log=lambda s: print(s, file=sys.stderr))
        # Kept whatever the outcome (a few hundred kB): a miss can be read afterwards
        # with the controller's own log, which goes with the cluster's directory.
        dest = evidence_dir(f"fidelity-{seed}")
        keep(obs, cluster, dest)
        print(f"fidelity seed {seed}: observation and slurmctld log kept in {dest}",
              file=sys.stderr)
    _observed[request.param] = obs
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
    assert ours.tau > slurm.tau, _why(observed, ours, slurm)


def test_start_windows_hold_the_actual_starts_as_often_as_they_say(
        observed: Observation) -> None:
    """[p10, p90] is an 80 % window. One seed's ~40 jobs: a calibrated window holds
    80 +- 13 % of them (two standard errors), so each seed is held to a loose band;
    once every seed ran, the pooled jobs (~80: +- 9 %) to a tighter one. Both are wider
    than that by what the sampling of 16 plans itself leaves."""
    own = calibration(observed, observed.predicted["estimate"])
    print(f"seed {observed.seed}: {own.row()}", file=sys.stderr)
    assert own.measured >= 20, _why(observed)
    assert SEED_CALIBRATION[0] <= own.inside / own.measured <= 1.0, \
        f"{own.row()}\n{_why(observed)}"
    if set(_observed) != set(SEEDS):
        return  # the pooled check runs with the last seed
    cals = [calibration(obs, obs.predicted["estimate"]) for obs in _observed.values()]
    pooled = Calibration(sum(c.inside for c in cals), sum(c.measured for c in cals),
                         float("nan"), sum(c.early for c in cals), sum(c.late for c in cals))
    print(pooled.row(), file=sys.stderr)
    share = pooled.inside / pooled.measured
    why = "\n".join([pooled.row(), *(f"seed {o.seed}: {c.row()}" for o, c in
                                     zip(_observed.values(), cals, strict=True))])
    assert CALIBRATION[0] <= share <= CALIBRATION[1], why


# The floor on every seed, and the calibration band over the pooled jobs. The
# targets (median tau >= 0.9, 75-90 % inside) are bench/fidelity.py's to measure.
TAU_FLOOR = 0.8
CALIBRATION = (0.6, 0.97)
SEED_CALIBRATION = (0.5, 1.0)
