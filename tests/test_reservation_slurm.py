"""Advanced reservations against the real Slurm of tests/harness (the scenario:
tests/harness/reservations.py): jobs kept off reserved nodes, jobs kept in their
reservation, a job waiting for its reservation to begin, each predicted before Slurm
acts and compared with what it did."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from harness.fidelity import evidence_dir, keep_logs
from harness.fixtures import fresh_cluster
from harness.reservations import TIED, ReservationObservation, run_reservations
from quotatop.collectors.slurm.scontrol import parse_reservations

# Seconds a start may be off. Every job runs just under its one-minute limit, and the
# prediction plans with limits: Slurm starts the next job up to a few seconds earlier.
TOLERANCE = 10.0


@pytest.fixture(scope="module")
def observed() -> Iterator[ReservationObservation]:
    with fresh_cluster("reservations") as cluster:
        obs = run_reservations(cluster, log=lambda s: print(s, file=sys.stderr))
        dest = evidence_dir("resv")
        keep_logs(cluster, dest)
        # Both answers as Slurm gave them (tests/fixtures/slurm/22.05 keeps a copy).
        (dest / "scontrol_reservation.txt").write_text(obs.raw_none)
        (dest / "scontrol_reservation_scenario.txt").write_text(obs.raw)
        print(f"reservations: slurmctld log kept in {dest}", file=sys.stderr)
    yield obs


def _row(obs: ReservationObservation, name: str) -> dict:
    row = obs.rows.get(obs.ids[name])
    assert row, f"no prediction for {name} ({obs.ids[name]})"
    return row


def test_the_snapshot_carries_both_reservations_and_the_jobs_in_them(
        observed: ReservationObservation) -> None:
    got = {r["name"]: r for r in observed.snapshot_reservations}
    assert set(got) == {"train", "maint"}, got
    assert got["train"]["nodes"] == ["gpu03", "gpu04"]
    assert got["train"]["users"] == ["alice", "erin"]
    assert got["maint"]["nodes"] == ["gpu07", "gpu08"]
    assert got["maint"]["start"] == observed.maint_start
    assert got["maint"]["end"] == observed.maint_start + 30 * 60
    assert _row(observed, "A2")["reservation"] == "train"
    assert _row(observed, "D")["reservation"] == "maint"
    assert _row(observed, "B")["reservation"] is None
    # The text fallback's column (squeue -O Reservation), as tests/fixtures assumes it.
    col = observed.text_column
    assert (col[observed.ids["A2"]], col[observed.ids["D"]]) == ("train", "maint"), col
    assert col[observed.ids["B"]] == "(null)", col
    # The parser reads the real output as the snapshot has it.
    assert [r.name for r in parse_reservations(observed.raw)] == ["train", "maint"]


@pytest.mark.parametrize("name", ["A2", "B", "C", "D"])
def test_each_job_starts_when_and_where_predicted(observed: ReservationObservation,
                                                  name: str) -> None:
    row = _row(observed, name)
    assert name in observed.actual, f"Slurm never started {name}"
    start, nodes = observed.actual[name]
    assert row["predicted_start"] is not None, row
    assert abs(row["predicted_start"] - start) <= TOLERANCE, (row["predicted_start"], start,
                                                               row["reason"])
    if name in TIED:
        # Which of two alike fills ends first is not knowable (harness.reservations).
        for got in (row["predicted_nodes"], nodes):
            assert len(got) == 1 and got[0] in TIED[name], (row["predicted_nodes"], nodes)
    else:
        assert sorted(row["predicted_nodes"]) == sorted(nodes), (row["predicted_nodes"], nodes)


def test_no_job_outside_a_reservation_is_predicted_on_its_nodes_in_its_window(
        observed: ReservationObservation) -> None:
    """B and C could start at once on idle reserved nodes; Slurm keeps them off, and
    so must the prediction: B not on gpu03-04, C not on gpu07-08 (its run would
    overlap maint)."""
    assert not {"gpu03", "gpu04"} & set(_row(observed, "B")["predicted_nodes"])
    assert not {"gpu07", "gpu08"} & set(_row(observed, "C")["predicted_nodes"])
    for name in ("B", "C"):
        row = _row(observed, name)
        assert row["state"] != "starts_now", row
        assert row["binding"].startswith("advanced reservation "), row


def test_a_job_waiting_for_its_reservation_says_so(observed: ReservationObservation) -> None:
    row = _row(observed, "D")
    assert row["predicted_start"] >= observed.maint_start
    assert row["reason"].startswith("waits for its reservation maint, which starts "), row
    assert row["binding"] == "advanced reservation maint"
    # Slurm's own word for it (squeue's reason), which the TUI puts in words too.
    assert row["source_reason"] == "Reservation", row["source_reason"]
