"""A fixed cluster for the TUI's Pilot and snapshot tests (not a demo scenario).

10 nodes × 8 GPUs = 80 GPUs. Teams prod / exp / elastic hold guarantees of
48 / 24 / 8 (60-30-10) with borrowing limits; hpc comes from a Slurm source,
so it has a max (GrpTRES) and no guarantee. One node is drained (8 GPUs
stranded) and one has its CPUs exhausted (4 GPUs stranded).

Usage: prod 28 (lends), exp 24 (at guarantee), elastic 10 (borrows 2 from prod),
hpc 4. Free 2. The clock is frozen at NOW.
"""

from __future__ import annotations

from quotatop.collectors.model import (
    PENDING,
    RUNNING,
    FairShare,
    Job,
    Node,
    Partition,
    PriorityFactors,
    QoS,
    Series,
    Snapshot,
    SourceStatus,
    Team,
)

T0 = 1_750_000_000.0
NOW = T0 + 5.0
H = 3600.0


def frozen_clock() -> float:
    return NOW


def _node(i: int, state: str = "mixed", gpu: float = 0.0, cpu: float = 0.0) -> Node:
    return Node(name=f"gpu{i:02d}", partitions=["gpu"] if i < 8 else ["gpu", "debug"],
                state=state, gpu_type="h100",
                capacity={"cpu": 64.0, "memory": 1_048_576.0, "gpu": 8.0},
                allocated={"cpu": cpu, "memory": gpu * 65536.0, "gpu": gpu},
                reason="maintenance: NVLink errors" if state == "drain" else None)


def _run(jid: str, team: str, user: str, gpus: float, node: str, started_h: float,
         qos: str = "normal", qos_class: str | None = None) -> Job:
    return Job(id=jid, name=f"{team}-train-{jid}", user=user, team=team, qos=qos,
               partition="gpu", state=RUNNING, request={"gpu": gpus, "cpu": gpus * 8},
               nodes=[node], submit_time=T0 - started_h * H - 600,
               start_time=T0 - started_h * H, time_limit=48 * H, qos_class=qos_class)


def _pend(jid: str, team: str, user: str, gpus: float, qos: str, reason: str,
          waited_h: float, priority: float, factors: PriorityFactors,
          estimated_start: float | None = None, nodes: int = 1) -> Job:
    return Job(id=jid, name=f"{team}-job-{jid}", user=user, team=team, qos=qos, partition="gpu",
               state=PENDING, request={"gpu": gpus, "cpu": gpus * 8}, nodes_requested=nodes,
               submit_time=T0 - waited_h * H, time_limit=24 * H, priority=priority,
               factors=factors, reason=reason, estimated_start=estimated_start)


def teams() -> list[Team]:
    return [
        Team(name="prod", guarantee={"gpu": 48.0}, max={"gpu": 64.0}, lendable={"gpu": 24.0},
             weight=3.0, preemptible=False, shares=60.0, cohort="ai",
             fairshare=FairShare(raw_shares=60, norm_shares=0.6, raw_usage=3.1e6,
                                 effective_usage=0.35, level_fs=1.71, factor=0.67),
             usage={"gpu": 28.0}, per_job_limit={"gpu": 32.0}, per_user_limit={"gpu": 32.0},
             max_wall=3 * 86400),
        Team(name="exp", guarantee={"gpu": 24.0}, max={"gpu": 40.0}, weight=2.0, shares=30.0,
             cohort="ai", fairshare=FairShare(raw_shares=30, norm_shares=0.3, raw_usage=2.9e6,
                                              effective_usage=0.33, level_fs=0.91, factor=0.47),
             usage={"gpu": 24.0}, per_job_limit={"gpu": 16.0}, per_user_limit={"gpu": 16.0},
             max_wall=2 * 86400),
        Team(name="elastic", guarantee={"gpu": 8.0}, max={"gpu": 32.0}, shares=10.0,
             cohort="ai", fairshare=FairShare(raw_shares=10, norm_shares=0.1, raw_usage=1.4e6,
                                              effective_usage=0.16, level_fs=0.62, factor=0.33),
             usage={"gpu": 10.0}, per_job_limit={"gpu": 8.0}, max_wall=86400),
        Team(name="hpc", guarantee=None, max={"gpu": 16.0}, shares=5.0,
             fairshare=FairShare(raw_shares=5, norm_shares=0.05, raw_usage=0.4e6,
                                 effective_usage=0.05, level_fs=1.0, factor=0.5),
             usage={"gpu": 4.0}, per_job_limit={"gpu": 8.0}, max_wall=2 * 86400,
             source_notes=["Slurm has no guarantee: GrpTRES is a max only"]),
    ]


def qos_levels() -> list[QoS]:
    return [
        QoS(name="high", priority=1000, preempts=["low", "scavenger"],
            max_tres_per_job={"gpu": 32.0}, max_wall=3 * 86400),
        QoS(name="normal", priority=100, max_tres_per_user={"gpu": 16.0}, max_wall=2 * 86400),
        QoS(name="low", priority=10, max_wall=86400, max_tres_per_user={"gpu": 8.0}),
        QoS(name="scavenger", priority=0, max_wall=4 * H, grp_tres={"gpu": 16.0}),
    ]


def jobs() -> list[Job]:
    return [
        _run("1001", "prod", "ana", 8, "gpu00", 30, qos="high", qos_class="Guaranteed"),
        _run("1002", "prod", "ana", 8, "gpu01", 20, qos="high", qos_class="Guaranteed"),
        _run("1003", "prod", "ben", 8, "gpu02", 12, qos="high", qos_class="Guaranteed"),
        _run("1004", "prod", "ben", 4, "gpu03", 5),
        _run("1005", "exp", "chen", 4, "gpu03", 9),
        _run("1006", "exp", "chen", 8, "gpu04", 7),
        _run("1007", "exp", "dara", 8, "gpu05", 3),
        _run("1008", "exp", "dara", 4, "gpu06", 2),
        _run("1009", "elastic", "eli", 2, "gpu06", 0.5, qos="low", qos_class="BestEffort"),
        _run("1010", "elastic", "eli", 8, "gpu07", 6, qos="scavenger", qos_class="BestEffort"),
        _run("1011", "hpc", "fay", 4, "gpu08", 1),
        _pend("2001", "prod", "ana", 16, "high", "Resources", 2, 9120,
              PriorityFactors(age=120, fairshare=6700, qos=2000, job_size=200, partition=100),
              estimated_start=T0 + 2 * H, nodes=2),
        _pend("2002", "exp", "chen", 8, "normal", "Priority", 6, 5400,
              PriorityFactors(age=900, fairshare=4700, qos=200, job_size=100, partition=100)),
        _pend("2003", "exp", "dara", 4, "normal", "QOSMaxGRESPerUser", 1, 5150,
              PriorityFactors(age=150, fairshare=4700, qos=200, job_size=50, partition=100)),
        _pend("2004", "elastic", "eli", 2, "low", "Quota", 9, 3900,
              PriorityFactors(age=1350, fairshare=3300, qos=20, job_size=20, partition=100),
              estimated_start=T0 + 5 * H),
        _pend("2005", "hpc", "fay", 8, "normal", "Priority", 3, 5600,
              PriorityFactors(age=450, fairshare=5000, qos=200, job_size=100, partition=100),
              estimated_start=T0 + 40 * 60),
        _pend("2006", "prod", "ben", 1, "normal", "Dependency", 0.2, 6950,
              PriorityFactors(age=30, fairshare=6700, qos=200, job_size=10, partition=100)),
    ]


def nodes() -> list[Node]:
    out = [_node(0, "allocated", 8, 64), _node(1, "allocated", 8, 64),
           _node(2, "allocated", 8, 64), _node(3, "allocated", 8, 64),
           _node(4, "allocated", 8, 64), _node(5, "allocated", 8, 64),
           _node(6, "mixed", 6, 48), _node(7, "allocated", 8, 64),
           _node(8, "mixed", 4, 64),  # CPUs exhausted: the 4 free GPUs are stranded
           _node(9, "drain", 0, 0)]
    return out


def usage_series() -> list[Series]:
    shape = {"prod": [20, 22, 26, 30, 32, 30, 28, 27, 28, 28, 29, 28],
             "exp": [10, 14, 18, 20, 24, 24, 22, 24, 26, 24, 24, 24],
             "elastic": [0, 2, 4, 8, 12, 14, 12, 10, 10, 8, 10, 10],
             "hpc": [8, 8, 6, 4, 4, 2, 4, 4, 6, 4, 4, 4]}
    return [Series(metric="team_gpu_used", labels={"team": t},
                   points=[(T0 - (11 - i) * 300, float(v)) for i, v in enumerate(vals)])
            for t, vals in shape.items()]


def snapshot(**changes: object) -> Snapshot:
    snap = Snapshot(cluster="atlas", source="fixture (slurm+kueue)", taken_at=T0,
                    nodes=nodes(), teams=teams(), qos=qos_levels(), jobs=jobs(),
                    partitions=[Partition(name="gpu", nodes=[f"gpu{i:02d}" for i in range(10)],
                                          default=True, max_time=3 * 86400),
                                Partition(name="debug", nodes=["gpu08", "gpu09"],
                                          max_time=4 * H)],
                    utilization=usage_series(),
                    status=[SourceStatus(name="squeue", ok=True, latency_ms=180, at=T0),
                            SourceStatus(name="kueue", ok=True, latency_ms=95, at=T0)],
                    meta={"unit": "gpu"})
    for k, v in changes.items():
        setattr(snap, k, v)
    return snap


class FixedCollector:
    """Returns the given snapshots in turn, then the last one forever."""

    def __init__(self, *snaps: Snapshot, name: str = "fixture") -> None:
        self.snaps = list(snaps) or [snapshot()]
        self.name = name
        self.calls = 0

    def collect(self) -> Snapshot:
        snap = self.snaps[min(self.calls, len(self.snaps) - 1)]
        self.calls += 1
        return snap

    def close(self) -> None:
        pass


class BrokenCollector(FixedCollector):
    """Good data once, then an exception (a collector bug) on every call."""

    def collect(self) -> Snapshot:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("squeue: connection refused")
        return self.snaps[0]
