"""The Rust core against the pure-Python reference on random clusters, jobs and
policies, and the invariants every simulation must keep."""

from __future__ import annotations

import math

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import core as ref

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, QoS, Snapshot, Team

POLICIES = st.fixed_dictionaries({
    "fairshare": st.sampled_from(["classic", "fair_tree"]),
    "backfill": st.sampled_from(["none", "easy", "conservative"]),
    "placement": st.sampled_from(["best_fit", "spread"]),
    "preemption": st.booleans(),
    "preempt_mode": st.sampled_from(["requeue", "suspend", "cancel"]),
    "strict_team_fifo": st.booleans(),
    "quota": st.sampled_from(["enforce", "max_only", "off"]),
    "bf_resolution": st.sampled_from([1.0, 10.0]),
})


@st.composite
def workloads(draw: st.DrawFn) -> tuple[Snapshot, list[scheduler_core.SimJob], dict]:
    n_nodes = draw(st.integers(1, 4))
    nodes = [Node(name=f"n{i}", capacity={"gpu": float(draw(st.sampled_from([4, 8]))),
                                          "cpu": 32.0}) for i in range(n_nodes)]
    n_teams = draw(st.integers(1, 3))
    teams = []
    for i in range(n_teams):
        g = draw(st.one_of(st.none(), st.sampled_from([0.0, 4.0, 8.0, 16.0])))
        m = draw(st.one_of(st.none(), st.sampled_from([8.0, 16.0])))
        teams.append(Team(name=f"t{i}", guarantee=None if g is None else {"gpu": g},
                          max=None if m is None else {"gpu": m},
                          parent="t0" if i == 2 and draw(st.booleans()) else None,
                          weight=float(draw(st.integers(1, 3)))))
    qos = [QoS(name="low"), QoS(name="high", priority=10, preempts=["low"])]
    jobs = []
    for k in range(draw(st.integers(1, 16))):
        gpus = float(draw(st.sampled_from([1, 2, 4, 8])))
        nn = draw(st.sampled_from([1, 1, 1, 2]))
        dur = float(draw(st.integers(1, 50)) * 10)
        jobs.append(scheduler_core.SimJob(
            id=str(k + 1), submit_time=float(draw(st.integers(0, 12)) * 10), duration=dur,
            time_limit=dur + float(draw(st.sampled_from([0, 50]))),
            request={"gpu": gpus * nn, "cpu": 4.0 * nn}, nodes_requested=nn,
            team=f"t{draw(st.integers(0, n_teams - 1))}", user=f"u{draw(st.integers(0, 1))}",
            qos=draw(st.sampled_from(["low", "high", "normal"])),
            qos_class=draw(st.sampled_from([None, "BestEffort", "Guaranteed"])),
            gang=draw(st.sampled_from([None, None, None, "g1"]))))
    return Snapshot(nodes=nodes, teams=teams, qos=qos), jobs, {}


@st.composite
def cohort_workloads(draw: st.DrawFn) -> tuple[Snapshot, list[scheduler_core.SimJob], dict]:
    """Lenders and borrowers in one cohort: a borrower fills the cluster early,
    lenders want their guarantee back later (reclaim), and higher-QoS work of
    either side asks for room (preemption that must stop at a guarantee)."""
    n_nodes = draw(st.integers(2, 3))
    cap = 8.0 * n_nodes
    nodes = [Node(name=f"n{i}", capacity={"gpu": 8.0, "cpu": 32.0}) for i in range(n_nodes)]
    g0 = draw(st.sampled_from([4.0, 8.0]))
    lend = draw(st.sampled_from([None, 4.0]))
    teams = [Team(name="t0", cohort="c", guarantee={"gpu": g0}, max={"gpu": cap}),
             Team(name="t1", cohort="c", guarantee={"gpu": cap - g0}, max={"gpu": cap},
                  lendable=None if lend is None else {"gpu": lend})]
    qos = [QoS(name="low"), QoS(name="high", priority=10, preempts=["low"])]
    jobs = []
    for k in range(draw(st.integers(2, 6))):  # the borrower, early and long
        gpus = float(draw(st.sampled_from([4, 8])))
        dur = float(draw(st.integers(20, 60)) * 10)
        jobs.append(scheduler_core.SimJob(
            id=f"b{k}", submit_time=float(draw(st.integers(0, 2)) * 10), duration=dur,
            time_limit=dur, request={"gpu": gpus, "cpu": 4.0}, team="t0", user="u0",
            qos=draw(st.sampled_from(["low", "normal"]))))
    for k in range(draw(st.integers(1, 5))):  # the lenders, later, or the borrower's urgent work
        gpus = float(draw(st.sampled_from([4, 8])))
        dur = float(draw(st.integers(5, 30)) * 10)
        jobs.append(scheduler_core.SimJob(
            id=f"l{k}", submit_time=float(draw(st.integers(3, 15)) * 10), duration=dur,
            time_limit=dur, request={"gpu": gpus, "cpu": 4.0},
            team=draw(st.sampled_from(["t1", "t1", "t0"])), user="u1",
            qos=draw(st.sampled_from(["low", "normal", "high"]))))
    overrides = {"preemption": True, "quota": "enforce", "strict_team_fifo": False}
    return Snapshot(nodes=nodes, teams=teams, qos=qos), jobs, overrides


WORKLOADS = st.one_of(workloads(), cohort_workloads())


def rust_events(snap: Snapshot, jobs: list, policy: dict) -> list[tuple]:
    r = scheduler_core.simulate(jobs, msgspec.convert(policy, scheduler_core.Policy),
                                cluster=snap, start=0.0)
    out: list[tuple] = []
    for e in r.events:
        if e.kind == "start":
            out.append((e.time, e.kind, e.job_id, tuple(e.nodes)))
        elif e.kind == "preempt":
            out.append((e.time, e.kind, e.job_id, e.by))
        else:
            out.append((e.time, e.kind, e.job_id))
    return out


def full_policy(p: dict) -> dict:
    return msgspec.to_builtins(msgspec.convert(p, scheduler_core.Policy))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WORKLOADS, POLICIES)
def test_rust_and_reference_agree(work: tuple, policy: dict) -> None:
    snap, jobs, overrides = work
    policy = {**policy, **overrides}
    expected = ref.simulate(msgspec.to_builtins(snap), msgspec.to_builtins(jobs),
                            full_policy(policy), start=0.0)
    assert rust_events(snap, jobs, policy) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WORKLOADS, POLICIES)
def test_invariants(work: tuple, policy: dict) -> None:
    snap, jobs, overrides = work
    policy = {**policy, **overrides}
    r = scheduler_core.simulate(jobs, msgspec.convert(policy, scheduler_core.Policy),
                                cluster=snap, start=0.0)
    cap = {n.name: n.capacity["gpu"] for n in snap.nodes}
    team_of = {j.id: j.team for j in jobs}
    per_node = {j.id: j.request["gpu"] / j.nodes_requested for j in jobs}
    gang_of = {j.id: j.gang for j in jobs}
    teams = {t.name: t for t in snap.teams}
    running: dict[str, list[str]] = {}
    gang_starts: dict[str, set[float]] = {}
    i = 0
    events = r.events
    while i < len(events):
        t = events[i].time
        preempted_gangs: set[str] = set()
        while i < len(events) and events[i].time == t:  # all that happens at one time
            e = events[i]
            if e.kind == "preempt" and gang_of[e.job_id]:
                preempted_gangs.add(gang_of[e.job_id])
            if e.kind == "start":
                assert len(e.nodes) == len(set(e.nodes))  # whole job, distinct nodes
                running[e.job_id] = e.nodes
                if gang_of[e.job_id]:
                    gang_starts.setdefault(gang_of[e.job_id], set()).add(t)
            elif e.kind in ("finish", "preempt"):
                if e.kind == "preempt":
                    victim = teams.get(team_of[e.job_id])
                    g = victim.guarantee.get("gpu") if victim and victim.guarantee else None
                    # The law protects the other teams: a job of the victim's own team
                    # takes its place (Kueue's withinClusterQueue), docs/core.md.
                    own = e.by is not None and team_of.get(e.by) == team_of[e.job_id]
                    if g is not None and policy["quota"] == "enforce" and not own:
                        left = sum(per_node[j] * len(ns) for j, ns in running.items()
                                   if team_of[j] == victim.name and j != e.job_id)
                        assert left >= g, "victim team preempted below its guarantee"
                running.pop(e.job_id)
            i += 1
        for g in preempted_gangs:
            assert not [j for j in running if gang_of[j] == g], f"gang {g} preempted partially"
        used = {n: 0.0 for n in cap}
        for j, ns in running.items():
            for n in ns:
                used[n] += per_node[j]
        assert all(used[n] <= cap[n] for n in cap), "node over capacity"
        if policy["quota"] != "off":
            for name, team in teams.items():
                held = sum(per_node[j] * len(ns) for j, ns in running.items()
                           if team_of[j] == name)
                if team.max is not None:
                    assert held <= team.max["gpu"], f"team {name} over its max"
    # A gang starts whole: its members' first starts share one time, and none is left
    # out. A member that can never start is rejected and leaves the gang (the reference
    # does the same); a member's later starts are restarts after a preemption, not
    # another member's start.
    rejected = {e.job_id for e in events if e.kind == "reject"}
    for g in gang_starts:
        first: dict[str, float] = {}
        for e in events:
            if e.kind == "start" and gang_of[e.job_id] == g:
                first.setdefault(e.job_id, e.time)
        admitted = {j.id for j in jobs if j.gang == g and j.id not in rejected}
        assert set(first) == admitted, "gang started partially"
        assert len(set(first.values())) == 1, "gang started partially"


def test_predict_agrees_with_reference_on_a_busy_cluster() -> None:
    nodes = [Node(name=f"n{i}", capacity={"gpu": 8.0, "cpu": 64.0}) for i in range(6)]
    jobs = [Job(id=f"r{i}", team=f"t{i % 3}", state="running", request={"gpu": 4.0},
                nodes=[f"n{i % 6}"], start_time=0.0, time_limit=600.0 * (1 + i % 4))
            for i in range(12)]
    jobs += [Job(id=str(i), team=f"t{i % 3}", request={"gpu": float(1 + i % 8)},
                 time_limit=300.0 * (1 + i % 5), submit_time=float(i)) for i in range(60)]
    teams = [Team(name="t0", max={"gpu": 24.0}), Team(name="t1", guarantee={"gpu": 16.0}),
             Team(name="t2")]
    snap = Snapshot(taken_at=100.0, nodes=nodes, teams=teams, jobs=jobs)
    for backfill in ("none", "easy", "conservative"):
        policy = scheduler_core.Policy(backfill=backfill)
        got = {p.job_id: (p.start, p.nodes) for p in scheduler_core.predict(snap, policy, 86400)}
        want = ref.predict(msgspec.to_builtins(snap), msgspec.to_builtins(policy), 86400)
        assert got == {k: (v[0], v[1]) for k, v in want.items()}
        assert any(s is not None and s > 100.0 for s, _ in got.values())
        assert not any(isinstance(s, float) and math.isnan(s) for s, _ in got.values())
