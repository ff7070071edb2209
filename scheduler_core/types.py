"""Typed results of predict and simulate: msgspec Structs decoded straight from
the core's msgpack (array_like, so a 50k-row result decodes in a few ms)."""

from __future__ import annotations

from msgspec import Struct


class Factors(Struct, array_like=True, frozen=True, gc=False):
    """Weighted priority contributions, as sprio shows them."""

    age: float
    fairshare: float
    qos: float
    job_size: float
    partition: float


class Preemption(Struct, array_like=True, frozen=True, gc=False):
    job_id: str
    mode: str  # requeue | suspend | cancel


class Prediction(Struct, array_like=True, frozen=True, gc=False):
    job_id: str
    state: str  # starts_now | planned | waiting | held | rejected
    start: float | None  # epoch seconds; None: no start within the horizon
    end: float | None  # start + time limit, when both are known
    nodes: list[str]
    reason: str  # the binding constraint in words
    preempts: list[Preemption]
    priority: float
    factors: Factors


class SimEvent(Struct, array_like=True, frozen=True):
    time: float
    kind: str  # submit | start | finish | preempt | reject
    job_id: str
    nodes: list[str]
    by: str | None  # preempt: the job that preempted it
    detail: str | None  # start: "backfill"; preempt: the mode; reject: the reason


class UsageSample(Struct, array_like=True, frozen=True):
    time: float
    usage: list[float]  # per team, in SimResult.teams order, in SimResult.unit


class Metrics(Struct, array_like=True, frozen=True):
    submitted: int
    started: int
    finished: int
    rejected: int
    preemptions: int
    mean_wait: float | None
    median_wait: float | None
    mean_bounded_slowdown: float | None  # tau = 10 s
    utilization: float
    jain_fairness: float  # over teams, usage per unit of weight
    stranded_gpu_fraction: float
    start: float
    end: float


class JobOutcome(Struct, array_like=True, frozen=True):
    job_id: str
    team: str
    submit: float
    start: float | None
    end: float | None
    state: str  # pending | running | finished | rejected | cancelled


class SimResult(Struct, array_like=True, frozen=True):
    teams: list[str]
    unit: str  # gpu, or cpu on a cluster without GPUs
    events: list[SimEvent]
    usage: list[UsageSample]
    metrics: Metrics
    jobs: list[JobOutcome]


class SimJob(Struct, kw_only=True, omit_defaults=True):
    """One job of a simulated workload or replayed trace."""

    id: str
    submit_time: float
    duration: float  # actual run time, seconds
    request: dict[str, float] = {}
    team: str = ""
    user: str = ""
    qos: str = "normal"
    qos_class: str | None = None
    time_limit: float | None = None
    nodes_requested: int = 1
    partition: str | None = None
    gang: str | None = None
