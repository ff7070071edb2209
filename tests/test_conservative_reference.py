"""quotatop's conservative backfilling against the pure-Python reference
(tests/reference/core.py), event for event, on a deep queue of the real NASA Ames
iPSC/860 log (demo_data/traces, not edited).

Conservative backfilling has its own code path in the core (issue #17: per-node
reservation lists and free-capacity profiles, reservations made only when a later job
reads them), taken only under this policy; the reference makes every reservation in
turn and sums every reservation at every time it checks. The log's first jobs of up to
8 processors on 8 one-processor nodes queue deeply, so each pass holds many
reservations, and a small ``bf_max_job_test`` also runs out of them mid-pass."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from reference import core as ref

import scheduler_core
from collectors.model import Node, Snapshot
from scheduler_core import Policy, PriorityWeights, SimJob
from simulation.traces.swf import load_swf

LOG = Path(__file__).resolve().parents[1] / "demo_data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
NODES = 8
JOBS = 400
FCFS = PriorityWeights(age=0, fairshare=0, qos=0, job_size=0, partition=0)


@pytest.fixture(scope="module")
def workload() -> tuple[Snapshot, list[SimJob]]:
    jobs: list[SimJob] = []
    for j in load_swf(LOG).jobs:
        procs = int(next(iter(j.request.values())))
        if procs <= NODES and j.duration > 0:
            jobs.append(SimJob(id=j.id, submit_time=j.submit_time, duration=j.duration,
                               time_limit=j.duration, request={"cpu": float(procs)},
                               nodes_requested=procs, team="t"))
        if len(jobs) == JOBS:
            break
    cluster = Snapshot(nodes=[Node(name=f"n{i:02d}", capacity={"cpu": 1.0})
                              for i in range(NODES)])
    return cluster, jobs


def core_events(cluster: Snapshot, jobs: list[SimJob], policy: Policy) -> list[tuple]:
    r = scheduler_core.simulate(jobs, policy, cluster=cluster, start=0.0)
    return [(e.time, e.kind, e.job_id, tuple(e.nodes)) if e.kind == "start"
            else (e.time, e.kind, e.job_id) for e in r.events]


@pytest.mark.parametrize("max_test", [100, 3])
def test_conservative_matches_the_reference_on_a_deep_queue(
        workload: tuple[Snapshot, list[SimJob]], max_test: int) -> None:
    cluster, jobs = workload
    policy = Policy(weights=FCFS, backfill="conservative", bf_resolution=1.0,
                    bf_max_job_test=max_test, preemption=False)
    got = core_events(cluster, jobs, policy)
    want = ref.simulate(msgspec.to_builtins(cluster), msgspec.to_builtins(jobs),
                        msgspec.to_builtins(policy), start=0.0)
    assert got == want
    starts = {e[2]: e[0] for e in got if e[1] == "start"}
    assert len(starts) == JOBS
    waited = sum(1 for j in jobs if starts[j.id] > j.submit_time)
    assert waited > JOBS // 5  # the queue is deep: reservations decide


def test_conservative_differs_from_easy_here(workload: tuple[Snapshot, list[SimJob]]) -> None:
    """The workload tells the policies apart, so the comparison above is not EASY's."""
    cluster, jobs = workload
    got = {p: core_events(cluster, jobs, Policy(weights=FCFS, backfill=p, bf_resolution=1.0,
                                                preemption=False))
           for p in ("easy", "conservative")}
    assert got["easy"] != got["conservative"]
