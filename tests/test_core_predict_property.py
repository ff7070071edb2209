"""predict (the core's class-by-class pass over a static queue) against the
reference's plain job-by-job predict, on random small snapshots: running jobs
with start times, limits and nodes, typed and plain GPUs, quotas per key."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import core as ref

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, QoS, Snapshot, Team

NOW = 1000.0
TYPES = ("h100", "a100")

PREDICT_POLICIES = st.fixed_dictionaries({
    "backfill": st.sampled_from(["none", "easy", "conservative"]),
    "placement": st.sampled_from(["best_fit", "spread", "consecutive"]),
    "preemption": st.booleans(),
    "strict_team_fifo": st.booleans(),
    "quota": st.sampled_from(["enforce", "max_only", "off"]),
    "bf_resolution": st.sampled_from([1.0, 10.0]),
})


def quota(draw: st.DrawFn, amounts: list[float]) -> dict[str, float] | None:
    keys = draw(st.lists(st.sampled_from(["gpu", "gpu:h100", "gpu:a100"]), max_size=2,
                         unique=True))
    return {k: draw(st.sampled_from(amounts)) for k in keys} or None


@st.composite
def snapshots(draw: st.DrawFn, max_nodes: int = 4) -> Snapshot:
    nodes = []
    for i in range(draw(st.integers(1, max_nodes))):
        gt = draw(st.sampled_from([None, *TYPES]))
        cap = {"gpu": float(draw(st.sampled_from([4, 8]))), "cpu": 32.0}
        if gt:
            cap[f"gpu:{gt}"] = cap["gpu"]
        nodes.append(Node(name=f"n{i}", capacity=cap, gpu_type=gt))
    teams = [Team(name=f"t{i}", cohort=draw(st.sampled_from([None, "c"])),
                  guarantee=quota(draw, [0.0, 4.0, 8.0]), max=quota(draw, [4.0, 8.0, 16.0]),
                  lendable=quota(draw, [0.0, 4.0]), weight=float(draw(st.integers(1, 3))))
             for i in range(draw(st.integers(1, 3)))]
    free = {n.name: n.capacity["gpu"] for n in nodes}
    jobs: list[Job] = []
    for k in range(draw(st.integers(0, 5))):  # running: only where they fit
        per = float(draw(st.sampled_from([1, 2, 4])))
        nn = draw(st.sampled_from([1, 1, 2]))
        on = [n for n in nodes if free[n.name] >= per][:nn]
        if len(on) < nn:
            continue
        for n in on:
            free[n.name] -= per
        gt = on[0].gpu_type if all(n.gpu_type == on[0].gpu_type for n in on) else None
        req = {"gpu": per * nn, "cpu": 2.0 * nn, **({f"gpu:{gt}": per * nn} if gt else {})}
        jobs.append(Job(id=f"r{k}", team=f"t{draw(st.integers(0, len(teams) - 1))}",
                        state="running", request=req, nodes=[n.name for n in on],
                        nodes_requested=nn, start_time=NOW - draw(st.integers(0, 60)) * 10,
                        time_limit=draw(st.sampled_from([None, 300.0, 900.0])),
                        qos=draw(st.sampled_from(["low", "normal"]))))
    # Pending jobs drawn from a few shapes, so that classes have many members.
    shapes = draw(st.lists(st.tuples(
        st.sampled_from([1.0, 2.0, 4.0, 8.0]), st.sampled_from([1, 1, 2]),
        st.sampled_from([None, None, *TYPES]), st.integers(0, len(teams) - 1),
        st.sampled_from([60.0, 300.0, 600.0]), st.sampled_from(["low", "normal", "high"]),
        st.sampled_from([None, "BestEffort", "Guaranteed"])), min_size=1, max_size=3))
    for k in range(draw(st.integers(1, 14))):
        per, nn, gt, team, limit, q, qc = draw(st.sampled_from(shapes))
        req = {"gpu": per * nn, "cpu": 2.0 * nn, **({f"gpu:{gt}": per * nn} if gt else {})}
        jobs.append(Job(id=str(k), team=f"t{team}", request=req, nodes_requested=nn,
                        submit_time=NOW - draw(st.integers(0, 30)) * 10, time_limit=limit,
                        user=f"u{draw(st.integers(0, 1))}", qos=q, qos_class=qc))
    qos = [QoS(name="low"), QoS(name="high", priority=10, preempts=["low"])]
    return Snapshot(taken_at=NOW, nodes=nodes, teams=teams, qos=qos, jobs=jobs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), PREDICT_POLICIES)
def test_predict_agrees_with_reference(snap: Snapshot, policy: dict) -> None:
    pol = msgspec.convert(policy, scheduler_core.Policy)
    got = {p.job_id: (p.start, p.nodes) for p in scheduler_core.predict(snap, pol, 3600)}
    want = ref.predict(msgspec.to_builtins(snap), msgspec.to_builtins(pol), 3600)
    assert got == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(max_nodes=12), st.sampled_from(["none", "easy", "conservative"]))
def test_consecutive_placement_agrees_with_slurms_rule(snap: Snapshot, backfill: str) -> None:
    # More nodes than above, so that runs of free nodes form and break: the core
    # finds a one-node job's run by walking nodes fewest-CPUs-first and stopping
    # early, the reference by Slurm's loop over every run.
    pol = scheduler_core.Policy(placement="consecutive", backfill=backfill)
    got = {p.job_id: (p.start, p.nodes) for p in scheduler_core.predict(snap, pol, 3600)}
    want = ref.predict(msgspec.to_builtins(snap), msgspec.to_builtins(pol), 3600)
    assert got == want
