"""What a source states about a team, held by the core (docs/core.md, "Stated
preemption", "Exhaustive quotas", "Held by the source"): whom a team's jobs may
preempt (TeamPreemption), a quota that names every resource its jobs may use, and a
job the source will not start. A team without a stated policy keeps the QoS and
reclaim rules, with no victim team taken below its guarantee."""

from __future__ import annotations

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot, Team, TeamPreemption

NOW = 14 * 3600.0


def nodes(cpu: float = 1000.0) -> list[Node]:
    """One node: ample, or holding exactly the cohort's quota (Kueue's premise that the
    quota is the capacity, so that quota lent out is also physically taken)."""
    return [Node(name="n0", capacity={"cpu": cpu, "memory": 1e6})]


def running(id_: str, team: str, cpu: float, priority: float, age: float = 600) -> Job:
    return Job(id=id_, team=team, state="running", request={"cpu": cpu}, nodes=["n0"],
               start_time=NOW - age, priority=priority, time_limit=3600.0)


def pending(id_: str, team: str, request: dict[str, float], priority: float = 0) -> Job:
    return Job(id=id_, team=team, request=request, priority=priority, submit_time=NOW - 10,
               time_limit=600.0)


def predict(snap: Snapshot) -> dict[str, scheduler_core.Prediction]:
    return {p.job_id: p for p in scheduler_core.predict(snap, scheduler_core.Policy(), 3600)}


def victims(p: scheduler_core.Prediction) -> list[str]:
    return sorted(v.job_id for v in p.preempts)


def test_within_never_keeps_the_teams_own_lower_priority_jobs() -> None:
    def snap(within: str | None) -> Snapshot:
        pre = TeamPreemption(within=within, reclaim="never") if within else None
        return Snapshot(taken_at=NOW, nodes=nodes(), teams=[
            Team(name="q", guarantee={"cpu": 4.0}, max={"cpu": 4.0}, preemption=pre)],
            jobs=[running("low", "q", 4, priority=1), pending("in", "q", {"cpu": 1}, 2)])

    assert victims(predict(snap("lower_priority"))["in"]) == ["low"]
    got = predict(snap("never"))["in"]
    assert got.preempts == [] and got.state != "starts_now"


def test_stated_reclaim_takes_a_borrower_below_its_guarantee_the_default_does_not() -> None:
    # a holds 2 of its 6 and asks 4; b holds 10 of its 6: b1 (4, older) and b2 (6).
    # Kueue takes the newest, b2, as b borrows before the removal (it leaves b at 4);
    # the default takes only what keeps b at its guarantee: b1.
    def snap(stated: bool) -> Snapshot:
        pre = TeamPreemption(within="lower_priority", reclaim="any") if stated else None
        teams = [Team(name=n, cohort="c", guarantee={"cpu": 6.0}, preemption=pre)
                 for n in ("a", "b")]
        return Snapshot(taken_at=NOW, nodes=nodes(12), teams=teams, jobs=[
            running("a1", "a", 2, 0), running("b1", "b", 4, 0, age=900),
            running("b2", "b", 6, 0, age=300), pending("in", "a", {"cpu": 4})])

    assert victims(predict(snap(True))["in"]) == ["b2"]
    assert victims(predict(snap(False))["in"]) == ["b1"]


def test_stated_reclaim_needs_the_job_to_fit_its_guarantee_after_its_own_victims() -> None:
    # a holds 5 of 6 (a-low 3, a-mid 2) and asks 4: with a-low gone it fits its 6, and
    # b's borrowed 1 comes back from b-low (Kueue's "preempt from all ClusterQueues").
    teams = [Team(name=n, cohort="c", guarantee={"cpu": 6.0},
                  preemption=TeamPreemption(within="lower_priority", reclaim="lower_priority"))
             for n in ("a", "b")]
    snap = Snapshot(taken_at=NOW, nodes=nodes(12), teams=teams, jobs=[
        running("a-low", "a", 3, -1), running("a-mid", "a", 2, 0),
        running("b-low", "b", 3, -1), running("b-mid", "b", 4, 0),
        pending("in", "a", {"cpu": 4})])
    assert victims(predict(snap)["in"]) == ["a-low", "b-low"]


def test_reclaim_lower_priority_spares_equal_priority_borrowers() -> None:
    def snap(rule: str) -> Snapshot:
        pre = TeamPreemption(within="never", reclaim=rule)
        teams = [Team(name=n, cohort="c", guarantee={"cpu": 6.0}, preemption=pre)
                 for n in ("a", "b")]
        return Snapshot(taken_at=NOW, nodes=nodes(12), teams=teams, jobs=[
            running("b1", "b", 4, 0), running("b2", "b", 4, 0, age=300),
            pending("in", "a", {"cpu": 6})])

    assert victims(predict(snap("any"))["in"]) == ["b2"]
    assert predict(snap("lower_priority"))["in"].preempts == []


def test_an_exhaustive_quota_holds_a_job_asking_for_a_resource_it_does_not_name() -> None:
    def snap(exhaustive: bool) -> Snapshot:
        return Snapshot(taken_at=NOW, nodes=nodes(), teams=[
            Team(name="q", guarantee={"cpu": 8.0, "example.com/fpga": 2.0},
                 quota_exhaustive=exhaustive)], jobs=[
            pending("gpu", "q", {"cpu": 1, "example.com/gpu": 1}),
            pending("mem", "q", {"cpu": 1, "memory": 100}),
            pending("fpga", "q", {"cpu": 1, "example.com/fpga": 1})])

    got = predict(snap(True))
    assert got["gpu"].state == "held" and got["gpu"].start is None
    assert "asks for example.com/gpu, which team q's quota does not name" in got["gpu"].reason
    assert got["mem"].state == "held" and "asks for memory" in got["mem"].reason
    assert got["fpga"].state == "starts_now"
    # A quota that does not say it is exhaustive (Slurm's GrpTRES) limits what it names.
    assert all(p.state == "starts_now" for p in predict(snap(False)).values())


def test_a_job_the_source_holds_never_starts_and_says_why() -> None:
    snap = Snapshot(taken_at=NOW, nodes=nodes(), teams=[Team(name="ns")], jobs=[
        Job(id="w", team="ns", request={"cpu": 1}, held="LocalQueue ns/x does not exist")])
    got = predict(snap)["w"]
    assert got.state == "held" and got.start is None
    assert got.reason == "held: LocalQueue ns/x does not exist"
