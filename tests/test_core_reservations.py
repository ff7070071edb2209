"""Advanced reservations in the core (Slurm's ``scontrol create reservation``), each on
a small hand-built snapshot whose answer is derived by hand in the docstring: over
its window a reservation's nodes take only the jobs that ask for it, and those run
only there, from its start, until its end. The same rules against the real Slurm:
tests/test_reservation_slurm.py."""

from __future__ import annotations

import re

import pytest

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Reservation, Snapshot
from quotatop.scheduler_core import Policy, PriorityWeights

NOW = 1_000_000.0
AGE = PriorityWeights(age=1000, fairshare=0, qos=0, job_size=0, partition=0)


def nodes(n: int = 2) -> list[Node]:
    return [Node(name=f"n{i}", capacity={"cpu": 64.0, "memory": 512000.0, "gpu": 8.0})
            for i in range(n)]


def run(jobs: list[Job], reservations: list[Reservation], n: int = 2,
        **policy: object) -> dict[str, scheduler_core.Prediction]:
    snap = Snapshot(taken_at=NOW, nodes=nodes(n), jobs=jobs, reservations=reservations)
    settings: dict[str, object] = {"bf_resolution": 1.0, "weights": AGE}
    settings.update(policy)
    return {p.job_id: p for p in scheduler_core.predict(snap, Policy(**settings), 86400)}


def pending(id: str, *, age: float = 100.0, limit: float = 600.0, **kw: object) -> Job:
    return Job(id=id, request={"gpu": 8.0}, submit_time=NOW - age, time_limit=limit,
               **kw)  # type: ignore[arg-type]


def running(id: str, node: str, ends: float, **kw: object) -> Job:
    return Job(id=id, state="running", request={"gpu": 8.0}, nodes=[node],
               start_time=NOW - 100, time_limit=ends + 100, **kw)  # type: ignore[arg-type]


def test_an_active_reservation_keeps_other_jobs_off_its_nodes_until_it_ends() -> None:
    """R holds n1 from before now to +500. p (first) takes n0 now. q would fit on n1
    now, but R closes it to q until +500; n0 is p's until +600: q starts at +500 on
    n1, and says that R is what holds it."""
    r = Reservation(name="R", nodes=["n1"], start=NOW - 10, end=NOW + 500)
    got = run([pending("p", age=200), pending("q")], [r])
    assert got["p"].state == "starts_now" and got["p"].nodes == ["n0"]
    assert got["q"].start == NOW + 500 and got["q"].nodes == ["n1"]
    assert got["q"].binding == "advanced reservation R"
    assert re.match(r"waits: the nodes it would fit on are held by reservation R "
                    r"\(until .*\), which it is not in", got["q"].reason), got["q"].reason
    # Without the reservation q starts now on n1: the rule is what moved it.
    free = run([pending("p", age=200), pending("q")], [])
    assert free["q"].state == "starts_now" and free["q"].nodes == ["n1"]


def test_a_future_reservation_takes_only_jobs_that_end_before_it() -> None:
    """R holds n1 from +200 to +2000; n0 runs r until +1000. s (100 s) fits on n1
    before R begins: it starts now. l (600 s) would overlap R on n1: it waits for n0
    at +1000. m asks for R: it starts when R begins, on n1 (s is gone by then), and
    its reason names R."""
    r = Reservation(name="R", nodes=["n1"], start=NOW + 200, end=NOW + 2000)
    got = run([running("r", "n0", 1000), pending("l", age=300),
               pending("s", age=200, limit=100), pending("m", age=100, reservation="R")], [r])
    assert got["s"].state == "starts_now" and got["s"].nodes == ["n1"]
    assert got["l"].start == NOW + 1000 and got["l"].nodes == ["n0"]
    assert got["m"].start == NOW + 200 and got["m"].nodes == ["n1"]
    assert got["m"].binding == "advanced reservation R"
    assert got["m"].reason.startswith("waits for its reservation R, which starts ")


def test_a_job_in_a_reservation_runs_only_on_its_nodes() -> None:
    """R holds n1 (active); n1 runs the member a until +300, n0 is idle. b, also in
    R, does not take idle n0: it waits for a's end on n1."""
    r = Reservation(name="R", nodes=["n1"], start=NOW - 10, end=NOW + 5000)
    got = run([running("a", "n1", 300, reservation="R"), pending("b", reservation="R")], [r])
    assert got["b"].start == NOW + 300 and got["b"].nodes == ["n1"]


def test_a_job_in_a_reservation_is_stopped_when_the_reservation_ends() -> None:
    """R holds n0 until +300; its member a (limit +1000) is killed then (ResvOverRun
    0), so x, not in R and with n0 as its only node, starts at +300, not +1000."""
    r = Reservation(name="R", nodes=["n0"], start=NOW - 10, end=NOW + 300)
    got = run([running("a", "n0", 1000, reservation="R"), pending("x")], [r], n=1)
    assert got["x"].start == NOW + 300


def test_a_job_in_a_reservation_the_snapshot_lacks_never_starts_and_says_why() -> None:
    got = run([pending("g", reservation="gone")], [])
    assert got["g"].start is None and got["g"].binding == "advanced reservation gone"
    assert got["g"].reason == ("rejected: can never start: it asks for reservation gone, "
                               "which the snapshot does not list (ended or deleted)")


def test_conservative_backfill_and_the_main_pass_keep_off_reserved_nodes_too() -> None:
    """The first test's answer under conservative backfill with the main pass on."""
    r = Reservation(name="R", nodes=["n1"], start=NOW - 10, end=NOW + 500)
    got = run([pending("p", age=200), pending("q")], [r], backfill="conservative",
              main_pass=True)
    assert got["p"].nodes == ["n0"]
    assert got["q"].start == NOW + 500 and got["q"].nodes == ["n1"]


def test_a_reservation_naming_an_unknown_node_is_refused_in_one_line() -> None:
    snap = Snapshot(nodes=nodes(1), reservations=[Reservation(name="R", nodes=["ghost"])])
    with pytest.raises(ValueError, match=re.escape('reservation "R": lists unknown node "ghost"')):
        scheduler_core.predict(snap, Policy(), 3600)
