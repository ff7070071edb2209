"""Quotas per GPU type: a typed key (`gpu:h100`) in a team's guarantee, max or
lendable is its own quota dimension, counted and enforced apart from plain
`gpu`; a typed request uses both. Checked against the Python reference."""

from __future__ import annotations

import msgspec
from reference import core as ref

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot, Team

NOW = 14 * 3600.0


def typed_nodes() -> list[Node]:
    """Two h100 and two a100 nodes of 8 GPUs."""
    return [Node(name=f"{t}-{i}", gpu_type=t,
                 capacity={"gpu": 8.0, "cpu": 64.0, f"gpu:{t}": 8.0})
            for t in ("h100", "a100") for i in range(2)]


def gpus(t: str, n: float) -> dict[str, float]:
    return {"gpu": n, f"gpu:{t}": n, "cpu": 8.0}


def predict(snap: Snapshot) -> dict[str, scheduler_core.Prediction]:
    policy = scheduler_core.Policy(bf_resolution=1)
    got = {p.job_id: p for p in scheduler_core.predict(snap, policy, 86400)}
    want = ref.predict(msgspec.to_builtins(snap), msgspec.to_builtins(policy), 86400)
    assert {k: (p.start, p.nodes) for k, p in got.items()} == want
    return got


def test_capped_on_h100_still_runs_on_a100() -> None:
    teams = [Team(name="vision", max={"gpu": 32.0, "gpu:h100": 8.0})]
    snap = Snapshot(taken_at=NOW, nodes=typed_nodes(), teams=teams, jobs=[
        Job(id="r1", team="vision", state="running", request=gpus("h100", 8.0),
            nodes=["h100-0"], start_time=NOW - 60, time_limit=3600.0),
        Job(id="h", team="vision", request=gpus("h100", 8.0), time_limit=600.0,
            submit_time=NOW - 30),
        Job(id="a", team="vision", request=gpus("a100", 8.0), time_limit=600.0,
            submit_time=NOW - 20)])
    p = predict(snap)
    # h100-1 is free, yet the team's h100 max binds; the a100 job is not held by it.
    assert p["h"].state == "planned" and p["h"].start == NOW - 60 + 3600
    assert p["h"].reason.startswith(
        "waits for team vision's max of 8 gpu:h100 GPUs (holds 8, asks 8); earliest at 14:59")
    assert p["h"].reason.endswith("when job r1 ends")
    assert p["a"].state == "starts_now" and p["a"].nodes[0].startswith("a100-")


def test_typed_request_also_counts_against_plain_gpu() -> None:
    teams = [Team(name="vision", max={"gpu": 8.0, "gpu:h100": 16.0})]
    snap = Snapshot(taken_at=NOW, nodes=typed_nodes(), teams=teams, jobs=[
        Job(id="r1", team="vision", state="running", request=gpus("h100", 8.0),
            nodes=["h100-0"], start_time=NOW - 60, time_limit=3600.0),
        Job(id="a", team="vision", request=gpus("a100", 8.0), time_limit=600.0)])
    p = predict(snap)
    assert p["a"].start == NOW - 60 + 3600
    assert p["a"].reason.startswith("waits for team vision's max of 8 GPUs (holds 8, asks 8);")


def test_rejected_when_asking_more_than_the_typed_max() -> None:
    teams = [Team(name="vision", max={"gpu:h100": 8.0})]
    snap = Snapshot(taken_at=NOW, nodes=typed_nodes(), teams=teams, jobs=[
        Job(id="big", team="vision", request=gpus("h100", 16.0), nodes_requested=2,
            time_limit=600.0)])
    p = predict(snap)["big"]
    assert p.state == "rejected" and "gpu:h100 GPUs, more than team vision's max of 8" in p.reason


def cohort(lendable: dict[str, float] | None) -> Snapshot:
    """Team a (h100 guarantee 8) borrows idle h100 of team b (guarantee 8)."""
    teams = [Team(name="a", cohort="c", guarantee={"gpu:h100": 8.0}, max={"gpu:h100": 16.0}),
             Team(name="b", cohort="c", guarantee={"gpu:h100": 8.0}, lendable=lendable)]
    return Snapshot(taken_at=NOW, nodes=typed_nodes(), teams=teams, jobs=[
        Job(id="r1", team="a", state="running", request=gpus("h100", 8.0),
            nodes=["h100-0"], start_time=NOW - 60, time_limit=3600.0),
        Job(id="more", team="a", request=gpus("h100", 8.0), time_limit=600.0)])


def test_borrows_idle_typed_guarantee_in_the_cohort() -> None:
    p = predict(cohort(None))["more"]
    assert p.state == "starts_now" and p.nodes == ["h100-1"]


def test_lending_limit_is_per_typed_key() -> None:
    p = predict(cohort({"gpu:h100": 0.0}))["more"]
    assert p.state == "planned" and p.start == NOW - 60 + 3600
    assert p.reason.startswith("waits for idle gpu:h100 GPUs to borrow in cohort c: team a is "
                               "over its guarantee of 8, 0 lendable now;")
    # A lending limit on another key leaves h100 lendable.
    assert predict(cohort({"gpu:a100": 0.0}))["more"].state == "starts_now"


def test_reclaim_preempts_the_typed_borrower() -> None:
    snap = cohort(None)
    snap.jobs[1] = Job(id="more", team="a", state="running", request=gpus("h100", 8.0),
                       nodes=["h100-1"], start_time=NOW - 30, time_limit=3600.0)
    snap.jobs.append(Job(id="back", team="b", request=gpus("h100", 8.0), time_limit=600.0))
    p = predict(snap)["back"]
    assert p.state == "starts_now" and p.nodes == ["h100-1"]
    assert [v.job_id for v in p.preempts] == ["more"]
