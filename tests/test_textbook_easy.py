"""quotatop's EASY against a textbook EASY (tests/reference/easy.py), job for job, on
the real NASA Ames iPSC/860 log (demo_data/traces, not edited).

The log has no requested times, so both schedulers plan with each job's real run time
(perfect estimates, the usual textbook assumption), and it ran at 47 % utilization on
its 128 processors, so every job starts on arrival; the machine here is made smaller
(32 one-processor nodes, jobs of up to 32 processors: the log's first 2,000 such jobs)
so that jobs queue and backfilling decides. Before reservations took capacity that
frees up later before capacity idle now, quotatop held jobs that fit beside the head's
reservation."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference.easy import Job, easy

from quotatop import scheduler_core
from quotatop.collectors.model import Node, Snapshot
from quotatop.scheduler_core import Policy, PriorityWeights, SimJob
from quotatop.simulation.traces.swf import load_swf

LOG = Path(__file__).resolve().parents[1] / "demo_data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
NODES = 32
FCFS = PriorityWeights(age=0, fairshare=0, qos=0, job_size=0, partition=0)


@pytest.fixture(scope="module")
def jobs() -> list[Job]:
    trace = load_swf(LOG)
    out = []
    for j in trace.jobs:
        procs = int(next(iter(j.request.values())))
        if procs <= NODES and j.duration > 0:
            out.append(Job(j.id, j.submit_time, j.duration, j.duration, procs))
        if len(out) == 2000:
            break
    return out


def quotatop_easy(jobs: list[Job], busy_first: bool) -> dict[str, float]:
    cluster = Snapshot(nodes=[Node(name=f"n{i:02d}", capacity={"cpu": 1.0})
                              for i in range(NODES)])
    sim = [SimJob(id=j.id, submit_time=j.submit, duration=j.runtime, time_limit=j.estimate,
                  request={"cpu": float(j.procs)}, nodes_requested=j.procs, team="t")
           for j in jobs]
    policy = Policy(weights=FCFS, backfill="easy", bf_resolution=1.0, preemption=False,
                    reserve_busy_first=busy_first)
    result = scheduler_core.simulate(sim, policy, cluster=cluster)
    return {o.job_id: o.start for o in result.jobs}


def test_the_log_queues_on_the_smaller_machine(jobs: list[Job]) -> None:
    start = easy(jobs, NODES)
    waited = sum(1 for j in jobs if start[j.id] > j.submit)
    assert waited > 200  # backfilling has work to do


def test_quotatops_easy_starts_every_job_when_textbook_easy_does(jobs: list[Job]) -> None:
    ref = easy(jobs, NODES)
    ours = quotatop_easy(jobs, busy_first=True)
    differ = [(j.id, ref[j.id], ours[j.id]) for j in jobs if ours[j.id] != ref[j.id]]
    assert not differ, f"{len(differ)} of {len(jobs)} jobs start elsewhen: {differ[:5]}"


def test_reservations_on_idle_nodes_hold_jobs_textbook_easy_starts(jobs: list[Job]) -> None:
    """The rule the busy-first reservation fixes: without it some jobs start later."""
    ref = easy(jobs, NODES)
    pinned = quotatop_easy(jobs, busy_first=False)
    assert any(pinned[j.id] > ref[j.id] for j in jobs)
