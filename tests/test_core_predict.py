"""predict(): start times, nodes, the binding constraint in words, preemptions,
priority factors; and bad input as ValueError naming the object."""

from __future__ import annotations

import re

import msgspec
import pytest
from reference import core as ref

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, QoS, Snapshot, Team

NOW = 14 * 3600.0  # 14:00 UTC on day 0


def cluster(jobs: list[Job], teams: list[Team] | None = None, qos: list[QoS] | None = None,
            nodes: int = 2) -> Snapshot:
    return Snapshot(taken_at=NOW, teams=teams or [], qos=qos or [], jobs=jobs,
                    nodes=[Node(name=f"n{i}", capacity={"gpu": 8.0, "cpu": 64.0,
                                                        "gpu:h100": 8.0})
                           for i in range(nodes)])


def by_id(snap: Snapshot, **policy: object) -> dict[str, scheduler_core.Prediction]:
    pol = scheduler_core.Policy(bf_resolution=1, **policy)  # type: ignore[arg-type]
    return {p.job_id: p for p in scheduler_core.predict(snap, pol, 86400)}


def test_waits_for_free_gpus_until_a_named_job_ends() -> None:
    snap = cluster([
        Job(id="812", team="a", state="running", request={"gpu": 8.0}, nodes=["n0"],
            start_time=NOW - 600, time_limit=1800.0),
        Job(id="813", team="a", state="running", request={"gpu": 4.0}, nodes=["n1"],
            start_time=NOW - 600, time_limit=7200.0),
        Job(id="900", team="b", request={"gpu": 8.0}, time_limit=600.0, submit_time=NOW - 5)])
    p = by_id(snap)["900"]
    assert p.state == "planned" and p.start == NOW + 1200 and p.nodes == ["n0"]
    assert p.reason.startswith("waits for 8 free GPUs on one node; earliest at 14:20 UTC")
    assert p.reason.endswith("when job 812 ends")
    assert p.end == p.start + 600


def test_team_max_is_the_binding_constraint() -> None:
    snap = cluster([
        Job(id="1", team="vision-exp", state="running", request={"gpu": 12.0}, nodes=["n0", "n1"],
            nodes_requested=2, start_time=NOW, time_limit=3600.0),
        Job(id="2", team="vision-exp", request={"gpu": 8.0}, time_limit=60.0)],
        teams=[Team(name="vision-exp", max={"gpu": 16.0})])
    p = by_id(snap)["2"]
    assert p.reason.startswith("waits for team vision-exp's max of 16 GPUs (holds 12, asks 8)")
    assert p.start == NOW + 3600


def running_gang(qos_of_second: str) -> list[Job]:
    """A two-member gang of whole nodes n0 and n1, and a free node n2 too small for
    the high-QoS job (made up)."""
    return [Job(id=f"g{i}", team="r", qos=q, state="running", request={"gpu": 8.0},
                nodes=[f"n{i}"], start_time=NOW - 100 + i, gang="ring")
            for i, q in enumerate(("low", qos_of_second))]


QOS = [QoS(name="low"), QoS(name="normal"), QoS(name="high", priority=10, preempts=["low"])]


def test_a_running_gang_is_preempted_whole() -> None:
    hi = Job(id="hi", team="s", qos="high", request={"gpu": 8.0}, time_limit=60.0,
             submit_time=NOW - 60)
    p = by_id(cluster([*running_gang("low"), hi], qos=QOS))["hi"]
    # One node is enough, but the gang cannot run on half of itself: both go.
    assert p.state == "starts_now"
    assert sorted(x.job_id for x in p.preempts) == ["g0", "g1"]
    assert "by preempting 2 jobs" in p.reason


def test_a_gang_with_a_member_out_of_reach_is_not_preempted() -> None:
    hi = Job(id="hi", team="s", qos="high", request={"gpu": 8.0}, time_limit=60.0,
             submit_time=NOW - 60)
    p = by_id(cluster([*running_gang("normal"), hi], qos=QOS))["hi"]
    assert p.preempts == [] and p.state != "starts_now"


def test_gang_preemption_agrees_with_the_reference() -> None:
    hi = Job(id="hi", team="s", qos="high", request={"gpu": 8.0}, time_limit=60.0,
             submit_time=NOW - 60)
    snap = cluster([*running_gang("low"), hi], qos=QOS)
    pol = scheduler_core.Policy(bf_resolution=1)
    r = scheduler_core.simulate([], pol, cluster=snap, start=NOW)
    got = [(e.time, e.kind, e.job_id, *((tuple(e.nodes),) if e.kind == "start" else
                                        (e.by,) if e.kind == "preempt" else ()))
           for e in r.events]
    want = ref.simulate(msgspec.to_builtins(snap), [], msgspec.to_builtins(pol), start=NOW)
    assert got == want
    pre = [e for e in r.events if e.kind == "preempt"]
    assert sorted(e.job_id for e in pre) == ["g0", "g1"] and {e.time for e in pre} == {NOW}


def test_preemption_listed_and_factors_sum_to_priority() -> None:
    snap = cluster([
        Job(id="be1", team="r", qos="low", state="running", request={"gpu": 8.0}, nodes=["n0"],
            start_time=NOW - 100),
        Job(id="be2", team="r", qos="low", state="running", request={"gpu": 8.0}, nodes=["n1"],
            start_time=NOW - 50),
        Job(id="hi", team="s", qos="high", request={"gpu": 8.0}, time_limit=60.0,
            submit_time=NOW - 3600)],
        qos=[QoS(name="low"), QoS(name="high", priority=10, preempts=["low"])])
    p = by_id(snap)["hi"]
    assert p.state == "starts_now" and p.start == NOW
    assert [(x.job_id, x.mode) for x in p.preempts] == [("be2", "requeue")]  # most recent
    assert "by preempting 1 job (be2)" in p.reason
    f = p.factors
    assert f.qos == 1000.0 and f.age > 0
    assert p.priority == pytest.approx(f.age + f.fairshare + f.qos + f.job_size + f.partition)


def test_limits_reject_or_hold_with_the_reason() -> None:
    snap = cluster([
        Job(id="run", team="a", user="u", qos="short", state="running", request={"gpu": 4.0},
            nodes=["n0"], start_time=NOW, time_limit=100.0),
        Job(id="long", team="a", user="u", qos="short", request={"gpu": 1.0}, time_limit=9000.0),
        Job(id="greedy", team="a", user="u", qos="short", request={"gpu": 4.0}, time_limit=60.0),
        Job(id="big", team="b", request={"gpu": 4.0}, time_limit=60.0),
        Job(id="typed", team="a", request={"gpu:a100": 1.0}, time_limit=60.0)],
        teams=[Team(name="a"), Team(name="b", per_job_limit={"gpu": 2.0})],
        qos=[QoS(name="short", max_wall=3600.0, max_tres_per_user={"gpu": 6.0})])
    p = by_id(snap)
    assert p["long"].state == "rejected" and "MaxWall of 3600s" in p["long"].reason
    assert p["big"].state == "rejected" and "team b's per-job limit of 2" in p["big"].reason
    assert p["typed"].state == "rejected" and "a100" in p["typed"].reason
    assert p["greedy"].reason.startswith("held: user u holds 4 of QoS short's MaxTRESPerUser")
    assert p["greedy"].start == NOW + 100  # the hold lifts when "run" ends


def test_predict_is_deterministic() -> None:
    jobs = [Job(id=str(i), team=f"t{i % 4}", request={"gpu": float(1 + i % 8)},
                time_limit=600.0 * (1 + i % 3), submit_time=NOW - i) for i in range(200)]
    snap = cluster(jobs, nodes=8)
    data = msgspec.msgpack.encode(snap)
    pol = msgspec.msgpack.encode(scheduler_core.Policy())
    assert scheduler_core.predict_msgpack(data, pol, 86400.0) == \
        scheduler_core.predict_msgpack(data, pol, 86400.0)


@pytest.mark.parametrize(("snap", "words"), [
    (Snapshot(nodes=[Node(name="n0")], jobs=[Job(id="7", state="running", nodes=["ghost"])]),
     'job "7": runs on unknown node "ghost"'),
    (Snapshot(nodes=[Node(name="n0", capacity={"gpu": -8.0})]),
     'node "n0": capacity gpu = -8 is negative'),
    (Snapshot(jobs=[Job(id="9", request={"cpu": -1.0})]), 'job "9": request cpu = -1'),
    (Snapshot(teams=[Team(name="a", parent="b"), Team(name="b", parent="a")]),
     'team "a": parent cycle a -> b -> a'),
    (Snapshot(teams=[Team(name="a", parent="zeta")]), 'parent "zeta" is not a known team'),
    (Snapshot(jobs=[Job(id="1", nodes_requested=0)]), 'job "1": nodes_requested 0'),
    (Snapshot(teams=[Team(name="a", guarantee={"gpu": float("nan")})]), 'team "a": guarantee'),
], ids=["unknown-node", "negative-capacity", "negative-request", "team-cycle",
        "unknown-parent", "zero-nodes", "nan-guarantee"])
def test_inconsistent_snapshot_raises_value_error_naming_the_object(snap: Snapshot,
                                                                   words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        scheduler_core.predict(snap, None, 3600)


def test_bad_policy_and_garbage_bytes() -> None:
    with pytest.raises(ValueError, match=r"policy.backfill: unknown value \"sometimes\""):
        scheduler_core.predict(Snapshot(), msgspec.msgpack.encode({"backfill": "sometimes"}), 1)
    with pytest.raises(ValueError, match=r"policy\.bf_resolution"):
        scheduler_core.predict(Snapshot(), msgspec.msgpack.encode({"bf_resolution": 0}), 1)
    with pytest.raises(ValueError, match="snapshot does not decode"):
        scheduler_core.predict(b"\xc1\xff\x00garbage", None, 1)
    with pytest.raises(ValueError, match="horizon"):
        scheduler_core.predict(Snapshot(), None, float("nan"))
    with pytest.raises(ValueError, match="needs a duration"):
        scheduler_core.simulate(msgspec.msgpack.encode({"jobs": [{"id": "1"}]}))


def test_a_panic_in_the_core_surfaces_as_value_error() -> None:
    from quotatop.scheduler_core import _core

    with pytest.raises(ValueError, match="internal error in the scheduling core"):
        _core._panic_for_test()
