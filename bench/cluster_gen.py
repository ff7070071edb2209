"""A made-up, evolving cluster for benchmarks: N jobs on GPU nodes, 2 s apart.

Not a real trace. Times, priorities and factors are whole numbers, as Slurm
reports them. Each tick a few jobs finish and as many are submitted, pending
jobs start when a node has room, team usage follows, and priorities are
recomputed every ``priority_every`` ticks (Slurm's PriorityCalcPeriod, 5 min by
default), so frames change the way a busy cluster's squeue output does.

Priorities follow Slurm's multifactor formula with integer weighted factors, as
sprio prints them: age (weight 10,000, PriorityMaxAge 7 days, so every pending
job's age term grows by ~5 per recalculation), fair-share (weight 100,000; each
user's factor random-walks, by up to ±0.005 per recalculation — usage accruing
and decaying), QoS (weight 10,000 × the QoS's normalised priority) and job size
(weight 1,000 × GPUs / 8). So at every recalculation *every* pending job's
priority changes (as on a real cluster), by amounts shared by a user's jobs.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import msgspec

from quotatop.collectors.model import (
    PENDING,
    RUNNING,
    Job,
    Node,
    Partition,
    PriorityFactors,
    QoS,
    Snapshot,
    Team,
)

TEAMS = ["vision", "nlp", "speech", "robotics", "infra", "research"]
QOS = ["high", "normal", "low"]


def evolving_cluster(jobs: int = 10_000, frames: int = 100, *, interval: float = 2.0,
                     gpus_per_node: int = 8, churn: int = 5, priority_every: int = 150,
                     priority_phase: int = 0,
                     seed: int = 1) -> Iterator[Snapshot]:
    rng = random.Random(seed)
    n_nodes = max(1, jobs // 8)
    names = [f"gpu{i:05d}" for i in range(n_nodes)]
    free = {n: gpus_per_node for n in names}
    t0 = 1_700_000_000.0
    live: dict[str, Job] = {}
    next_id = 1
    users = [f"u{i}" for i in range(60)]
    fs_factor = {u: rng.uniform(0.05, 0.95) for u in users}
    qos_norm = {"high": 1.0, "normal": 0.1, "low": 0.0}

    def reprioritise(job: Job, now: float) -> Job:
        f = PriorityFactors(
            age=float(int(10_000 * min(1.0, (now - job.submit_time) / (7 * 86400)))),
            fairshare=float(int(100_000 * fs_factor[job.user])),
            qos=float(int(10_000 * qos_norm[job.qos])),
            job_size=float(int(1_000 * job.request["gpu"] / gpus_per_node)))
        return msgspec.structs.replace(
            job, factors=f, priority=f.age + f.fairshare + f.qos + f.job_size)

    def new_job(now: float, submitted: float) -> Job:
        nonlocal next_id
        team = rng.choice(TEAMS)
        gpus = rng.choice([1, 1, 1, 2, 4, 8])
        job = Job(id=str(next_id), name=f"train-{team}-{next_id % 997}",
                  user=rng.choice(users),
                  team=team, qos=rng.choice(QOS), partition="gpu", state=PENDING,
                  request={"gpu": float(gpus), "cpu": gpus * 8.0, "memory": gpus * 65536.0},
                  time_limit=rng.choice([3600.0, 4 * 3600.0, 24 * 3600.0]),
                  submit_time=submitted, reason="Priority")
        next_id += 1
        return reprioritise(job, now)

    def try_start(job: Job, now: float) -> None:
        need = int(job.request["gpu"])
        for _ in range(8):
            n = names[rng.randrange(n_nodes)]
            if free[n] >= need:
                free[n] -= need
                dirty.add(n)
                live[job.id] = msgspec.structs.replace(
                    job, state=RUNNING, reason=None, nodes=[n], start_time=now,
                    priority=None, factors=None)
                return

    def node(n: str) -> Node:
        return Node(name=n, partitions=["gpu"], gpu_type="h100",
                    state="idle" if free[n] == gpus_per_node else
                    ("allocated" if free[n] == 0 else "mixed"),
                    capacity={"gpu": float(gpus_per_node), "cpu": 64.0, "memory": 524288.0},
                    allocated={"gpu": float(gpus_per_node - free[n])})

    # Jobs and nodes are replaced, never mutated, once yielded: snapshots share the
    # unchanged ones (the recorder diffs consecutive snapshots) and copying 10k jobs
    # a frame would make the generator, not the recorder, what a bench measures.
    dirty: set[str] = set()
    for _ in range(jobs):
        j = new_job(t0, t0 - rng.randrange(86400))
        live[j.id] = j
        try_start(j, t0 - rng.randrange(3600))
    node_objs = {n: node(n) for n in names}
    dirty.clear()
    for f in range(frames):
        now = t0 + f * interval
        if f:
            running = [j for j in live.values() if j.state == RUNNING]
            for j in rng.sample(running, min(churn, len(running))):
                free[j.nodes[0]] += int(j.request["gpu"])
                dirty.add(j.nodes[0])
                del live[j.id]
            for _ in range(churn):
                j = new_job(now, now)
                live[j.id] = j
            pending = [j for j in live.values() if j.state == PENDING]
            for j in rng.sample(pending, min(churn, len(pending))):
                try_start(j, now)
            if (f - priority_phase) % priority_every == 0:
                for u in users:
                    fs_factor[u] = min(1.0, max(0.0, fs_factor[u] + rng.uniform(-0.005, 0.005)))
                for j in list(live.values()):
                    if j.state == PENDING:
                        live[j.id] = reprioritise(j, now)
        for n in dirty:
            node_objs[n] = node(n)
        dirty.clear()
        job_list = list(live.values())
        usage: dict[str, float] = dict.fromkeys(TEAMS, 0.0)
        for j in job_list:
            if j.state == RUNNING:
                usage[j.team] += j.request["gpu"]
        teams = [Team(name=t, max={"gpu": n_nodes * gpus_per_node / 3}, shares=1.0,
                      usage={"gpu": usage[t]}) for t in TEAMS]
        yield Snapshot(cluster="made-up", source="bench", taken_at=now,
                       nodes=list(node_objs.values()),
                       partitions=[Partition(name="gpu", nodes=names, default=True)],
                       teams=teams, qos=[QoS(name=q, priority=p) for q, p in
                                         zip(QOS, (1000, 100, 0), strict=True)],
                       jobs=job_list)
