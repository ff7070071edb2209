"""Typed results of predict and simulate: msgspec Structs decoded straight from
the core's msgpack (array_like, so a 50k-row result decodes in a few ms).
gc=False: results are trees of strings and numbers, never cycles, and a trace's
300k tracked events would make the cyclic collector rescan them again and again."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import msgspec
from msgspec import Raw, Struct


class Factors(Struct, array_like=True, frozen=True, gc=False):
    """Weighted priority contributions, as sprio shows them."""

    age: float
    fairshare: float
    qos: float
    job_size: float
    partition: float


class FairShareRow(Struct, array_like=True, frozen=True, gc=False):
    """One team's fair-share at a snapshot, as the core computes it (``fairshare``)."""

    team: str
    raw_shares: float
    raw_usage: float
    norm_shares: float  # its shares over its siblings'
    norm_usage: float  # its usage over its siblings' (an account: its subtree's)
    level_fs: float  # norm_shares / norm_usage; inf when it used nothing
    factor: float  # 0..1, what its jobs' fair-share factor is before the weight


class StartWindow(Struct, array_like=True, frozen=True, gc=False):
    """A pending job's start over many plans with sampled run times (``predict_windows``):
    epoch seconds, None where that share of the plans starts it beyond the horizon."""

    job_id: str
    p10: float | None
    p50: float | None
    p90: float | None


class Preemption(Struct, array_like=True, frozen=True, gc=False):
    job_id: str
    mode: str  # requeue | suspend | cancel


class Prediction(Struct, array_like=True, frozen=True, gc=False):
    job_id: str
    state: str  # starts_now | planned | waiting | held | rejected
    start: float | None  # epoch seconds; None: no start within the horizon
    end: float | None  # start + runtime (the time limit, or the estimate), when known
    nodes: list[str]
    reason: str  # the binding constraint in words
    preempts: list[Preemption]
    priority: float
    factors: Factors
    # Appended fields (defaults let rows of an older core decode):
    binding: str = ""  # the binding limit or resource in short words; "" when it starts now
    runtime: float | None = None  # seconds this job runs in the prediction; None: unlimited
    runtime_basis: str = ""  # "estimate: <basis>", "time limit" or "no time limit"


class SimEvent(Struct, array_like=True, frozen=True, gc=False):
    time: float
    kind: str  # submit | start | finish | preempt | reject
    job_id: str
    nodes: list[str]
    by: str | None  # preempt: the job that preempted it
    detail: str | None  # start: "backfill"; preempt: the mode; reject: the reason


class UsageSample(Struct, array_like=True, frozen=True, gc=False):
    time: float
    usage: list[float]  # per team, in SimResult.teams order, in SimResult.unit


class Metrics(Struct, array_like=True, frozen=True, gc=False):
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


class JobOutcome(Struct, array_like=True, frozen=True, gc=False):
    job_id: str
    team: str
    submit: float
    start: float | None
    end: float | None
    state: str  # pending | running | finished | rejected | cancelled


class SimResultWire(Struct, array_like=True, frozen=True, gc=False):
    """simulate's answer as it crosses: the bulky parts stay msgpack until read."""

    teams: list[str]
    unit: str
    events: Raw
    usage: Raw
    metrics: Metrics
    jobs: Raw


_events = msgspec.msgpack.Decoder(list[SimEvent])
class _UsageChange(Struct, array_like=True, frozen=True, gc=False):
    """One usage sample as it crosses: only the teams that changed, as (index, usage)."""

    time: float
    changed: list[tuple[int, float]]


_usage = msgspec.msgpack.Decoder(list[_UsageChange])
_jobs = msgspec.msgpack.Decoder(list[JobOutcome])


def _array_len(raw: Raw) -> int:
    """Element count from a msgpack array header, without decoding the elements."""
    b = memoryview(raw)
    if not b:
        raise ValueError("empty msgpack value")
    head = b[0]
    if 0x90 <= head <= 0x9F:
        return head & 0x0F
    if head == 0xDC:
        return int.from_bytes(b[1:3], "big")
    if head == 0xDD:
        return int.from_bytes(b[1:5], "big")
    raise ValueError(f"not a msgpack array (first byte {head:#x})")


class SimResult:
    """Events, usage samples and per-job outcomes of a simulation. A 100k-job
    trace gives 300k events and as many usage samples: each part is decoded when
    first read, so a caller that wants only the metrics never pays for them."""

    __slots__ = ("_events", "_jobs", "_usage", "_wire")

    def __init__(self, wire: SimResultWire) -> None:
        self._wire = wire
        self._events: list[SimEvent] | None = None
        self._usage: list[UsageSample] | None = None
        self._jobs: list[JobOutcome] | None = None

    @property
    def teams(self) -> list[str]:
        return self._wire.teams

    @property
    def unit(self) -> str:  # gpu, or cpu on a cluster without GPUs
        return self._wire.unit

    @property
    def metrics(self) -> Metrics:
        return self._wire.metrics

    @property
    def event_count(self) -> int:
        return _array_len(self._wire.events)

    @property
    def events(self) -> list[SimEvent]:
        if self._events is None:
            with _gc_paused():
                self._events = _events.decode(self._wire.events)
        return self._events

    @property
    def usage(self) -> list[UsageSample]:
        if self._usage is None:
            with _gc_paused():
                now = [0.0] * len(self._wire.teams)
                samples = []
                for change in _usage.decode(self._wire.usage):
                    for team, used in change.changed:
                        now[team] = used
                    samples.append(UsageSample(change.time, now.copy()))
                self._usage = samples
        return self._usage

    @property
    def jobs(self) -> list[JobOutcome]:
        if self._jobs is None:
            with _gc_paused():
                self._jobs = _jobs.decode(self._wire.jobs)
        return self._jobs


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    # The events' node lists are tracked containers: full collections triggered by
    # a few hundred thousand of them would cost more than the decode itself.
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
