"""A preemption predicted before it happens, against the real Slurm of tests/harness
(the scenario: tests/harness/preemption.py). The fidelity workload needs none, so this
is where quotatop's preemption model meets a preemption Slurm really makes."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from harness.fidelity import evidence_dir, keep_logs
from harness.fixtures import fresh_cluster
from harness.preemption import PreemptionObservation, run_preemption


@pytest.fixture(scope="module")
def observed() -> Iterator[PreemptionObservation]:
    with fresh_cluster("preemption") as cluster:
        obs = run_preemption(cluster, log=lambda s: print(s, file=sys.stderr))
        # The controller's log goes with the cluster's directory: kept, so that a miss
        # can be read afterwards (as the fidelity test does).
        dest = evidence_dir("preemption")
        keep_logs(cluster, dest)
        print(f"preemption: slurmctld log kept in {dest}", file=sys.stderr)
    yield obs


def test_the_holder_preempted_an_a100_low_job_before_the_prediction(
        observed: PreemptionObservation) -> None:
    # The setting the scenario needs: one low job requeued at once, not the h100 one.
    assert len(observed.holder_victims) == 1 and observed.victim not in observed.holder_victims


def test_the_preemptor_is_predicted_to_preempt_the_one_job_slurm_preempts(
        observed: PreemptionObservation) -> None:
    row = observed.predicted
    assert row, "no prediction for the held high-QoS job"
    assert {p["job_id"] for p in row["preempts"]} == {observed.victim}, row
    assert observed.actual_start is not None, "Slurm never started the preemptor"
    assert observed.requeued == observed.holder_victims | {observed.victim}


def test_the_preemptor_starts_when_predicted(observed: PreemptionObservation) -> None:
    # Planned with the holder's one-minute limit; it runs 55 s, and Slurm starts the
    # preemptor once the victim is gone (KillWait=2): a few seconds early at most.
    row = observed.predicted
    assert observed.actual_start is not None and row.get("predicted_start") is not None
    assert abs(row["predicted_start"] - observed.actual_start) <= 10, (
        row["predicted_start"], observed.actual_start)


def test_no_other_preemption_is_predicted(observed: PreemptionObservation) -> None:
    predicted = {p["job_id"] for r in observed.rows.values() for p in r["preempts"]
                 if r["job_id"] != observed.preemptor}
    assert predicted <= observed.requeued, predicted


def test_the_job_preempted_before_the_prediction_starts_again_when_predicted(
        observed: PreemptionObservation) -> None:
    """A's victim was requeued with a begin time 120 s ahead (cred_expire): the node A
    leaves at +55 s stays free until then, and the prediction must say so, not start
    the victim when A ends."""
    assert observed.restart_begin is not None, "no EligibleTime for the requeued job"
    assert observed.restart_predicted is not None and observed.restart_actual is not None
    assert observed.restart_predicted >= observed.restart_begin
    assert abs(observed.restart_predicted - observed.restart_actual) <= 10, (
        observed.restart_predicted, observed.restart_actual, observed.restart_begin)
