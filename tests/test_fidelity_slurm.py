"""Fidelity against the real Slurm: what quotatop predicts against what Slurm does.

A fresh cluster of tests/harness (not the session's, whose fixed workload other tests
read) runs the controlled workload of tests/harness/fidelity.py: quotatop's
``predict --source slurm --json`` and Slurm's ``squeue --start`` are taken at one
moment, then every queued job's actual start is read from sacct. ``bench/fidelity.py``
prints the same comparison as a table."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from harness.fidelity import (
    FILL_LOW_NODES,
    Observation,
    Scores,
    evidence_dir,
    keep,
    placement_at_start,
    quotatop_scores,
    run_workload,
    slurm_scores,
    worst,
)
from harness.fixtures import fresh_cluster


@pytest.fixture(scope="module")
def observed() -> Iterator[Observation]:
    with fresh_cluster("fidelity") as cluster:
        obs = run_workload(cluster, log=lambda s: print(s, file=sys.stderr), keep_snapshot=True)
        # Kept whatever the outcome (a few hundred kB): a miss can be read afterwards with
        # the controller's own log, which goes with the cluster's directory.
        dest = evidence_dir("fidelity")
        keep(obs, cluster, dest)
        print(f"fidelity: observation and slurmctld log kept in {dest}", file=sys.stderr)
    yield obs


def _why(observed: Observation, *scores: Scores) -> str:
    return "\n".join([*(s.row() for s in scores), worst(observed)])


def test_the_fill_took_the_layout_the_workload_was_timed_for(observed: Observation) -> None:
    """The pinned jobs cannot go elsewhere; the low-QoS ones are left to Slurm, whose
    node choice puts them on the two free nodes (FILL's comment says why)."""
    first = {f: observed.runs[f][0][2] for f in observed.fill if observed.runs.get(f)}
    assert len(first) == len(observed.fill), "a fill job never started"
    for f, kind in observed.fill.items():
        assert first[f] == FILL_LOW_NODES.get(kind, first[f]), (f, kind, first[f])


def test_every_pending_job_has_a_prediction_or_a_stated_reason(observed: Observation) -> None:
    rows = observed.predicted["estimate"]
    assert len(observed.jobs) >= 20  # the queue really queued (28 of 39 in the runs measured)
    for job_id in observed.jobs:
        row = rows[job_id]
        assert row["predicted_start"] is not None or row["reason"], row


def test_start_order_agrees_with_slurm(observed: Observation) -> None:
    ours = quotatop_scores(observed, "estimate")
    print(ours.row(), slurm_scores(observed).row(), sep="\n", file=sys.stderr)
    slurm = slurm_scores(observed)
    assert ours.with_start == ours.measured
    assert ours.tau >= TAU_FLOOR, _why(observed, ours, slurm)
    assert ours.tau > slurm.tau, _why(observed, ours, slurm)


def test_predicted_node_sets_are_slurms(observed: Observation) -> None:
    """The issue's node-set target on the whole prediction: the nodes predicted at the
    snapshot's moment are the ones each job got, for >= 80 % of the jobs (89-100 %
    measured; two identical jobs starting together may take each other's node)."""
    ours = quotatop_scores(observed, "estimate")
    assert ours.node_match >= 0.8, _why(observed, ours)


def test_start_error_is_no_worse_than_slurms_own(observed: Observation) -> None:
    # On the jobs for which Slurm itself gave an estimate.
    same = [i for i in observed.jobs if i in observed.slurm_start]
    assert len(same) >= 10
    ours = quotatop_scores(observed, "estimate", same)
    slurm = slurm_scores(observed, same)
    assert ours.median_err <= slurm.median_err, _why(observed, ours, slurm)
    assert ours.p90_err <= slurm.p90_err, _why(observed, ours, slurm)


def test_node_choice_given_the_state_is_slurms(observed: Observation) -> None:
    """The issue's node-set target (right for >= 80 % of the jobs whose placement Slurm
    makes deterministically), on the rule itself: at each job's actual start, with
    every other job where it really was, the core's choice under the site's own
    placement setting against Slurm's. Measured 26-29 of 29 in four runs (best fit
    by GPUs: 26-29). The whole prediction's node set (bench/fidelity.py) is lower, as
    a job ending seconds early moves every later choice."""
    assert observed.snapshot is not None
    placement = observed.snapshot.get("scheduler", {}).get("placement")
    assert placement == "consecutive"  # the harness runs select/cons_tres
    right, measured = placement_at_start(observed, placement)
    assert measured >= 20
    assert right >= 0.8 * measured, (right, measured)


def test_no_predicted_preemption_that_slurm_did_not_make(observed: Observation) -> None:
    """Preemptions the prediction makes at the snapshot's moment (a job that starts now
    by preempting) must be ones Slurm made. One predicted for later hangs on which of
    two nearly simultaneous job ends comes first, as start times do; bench/fidelity.py
    prints those beside Slurm's."""
    rows = observed.predicted["estimate"]
    now = {p["job_id"] for r in rows.values() if r["state"] == "starts_now"
           for p in r["preempts"]}
    assert now <= observed.preempted


# The target. With the workload before, chosen without regard to timing, four runs
# measured 0.996, 0.953, 0.996 and 0.895: below 0.95 it was always two job ends a second or
# two apart, which Slurm answered together or one by one as its threads happened to run.
# The sleeps are now chosen so that no such pair exists (tests/harness/workload_timing.py;
# tests/test_fidelity_workload.py holds it), and the runs measured with bench/fidelity.py
# give 1.00 (Slurm's own estimate: 0.04-0.11).
TAU_FLOOR = 0.9
