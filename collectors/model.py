"""The one snapshot model shared by every collector, the core and the TUI.

Every source (Slurm, Kubernetes/Kueue, Prometheus, replay, demo scenarios) maps
what it sees into these Structs. Units are fixed so that sources agree:

* time: seconds since the Unix epoch (float); durations in seconds.
* resources: a small map, not fixed fields. Keys are ``cpu`` (cores, may be
  fractional), ``memory`` (MiB), ``gpu`` (all GPUs) and typed GPUs such as
  ``gpu:h100``. Any other extended resource keeps its source name.

A team's quota is one model — guarantee, max, lendable, weight, preemptible —
and ``None`` means "this source has no such notion" (Slurm has no guarantee),
which the UI says out loud rather than showing a zero.
"""

from __future__ import annotations

import msgspec
from msgspec import Struct, field

SCHEMA_VERSION = 1

Resources = dict[str, float]

# Job states, normalised across sources.
PENDING = "pending"
RUNNING = "running"
SUSPENDED = "suspended"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
PREEMPTED = "preempted"
ACTIVE_STATES = frozenset({RUNNING, SUSPENDED})


class Partition(Struct, kw_only=True, omit_defaults=True):
    name: str
    nodes: list[str] = []
    state: str = "up"
    max_time: float | None = None  # seconds; None = unlimited
    priority_tier: int = 0
    priority_job_factor: int = 0
    default: bool = False


class Node(Struct, kw_only=True, omit_defaults=True):
    name: str
    partitions: list[str] = []
    state: str = "idle"  # idle | mixed | allocated | down | drain | unknown
    capacity: Resources = {}
    allocated: Resources = {}
    allocatable: Resources = {}  # what pods may use (k8s status.allocatable); {}: = capacity
    gpu_type: str | None = None
    gpus_used_indices: list[int] = []
    labels: dict[str, str] = {}
    taints: list[str] = []
    reason: str | None = None


class FairShare(Struct, kw_only=True, omit_defaults=True):
    """Fair-share state of one account/team, as ``sshare -l`` reports it."""

    raw_shares: float | None = None
    norm_shares: float | None = None
    raw_usage: float | None = None
    effective_usage: float | None = None
    factor: float | None = None  # F = 2^(-U/S) or the Fair Tree rank factor
    level_fs: float | None = None


class Team(Struct, kw_only=True, omit_defaults=True):
    name: str
    parent: str | None = None
    cohort: str | None = None
    guarantee: Resources | None = None  # nominal quota; None: source has no notion
    max: Resources | None = None  # guarantee + borrowing limit (Slurm GrpTRES)
    lendable: Resources | None = None  # lending limit; None: all unused guarantee
    weight: float = 1.0
    preemptible: bool = True
    shares: float | None = None
    fairshare: FairShare | None = None
    usage: Resources = {}  # what the source says the team holds now
    borrowed: Resources = {}  # part of usage above guarantee, taken from the cohort (Kueue)
    per_job_limit: Resources | None = None  # LimitRange max / MaxTRESPerJob
    per_user_limit: Resources | None = None
    max_wall: float | None = None
    max_submit_jobs: int | None = None
    source_notes: list[str] = []  # e.g. "Slurm has no guarantee: max only"


class QoS(Struct, kw_only=True, omit_defaults=True):
    name: str
    priority: int = 0
    preempts: list[str] = []
    preempt_mode: str = "requeue"  # requeue | suspend | cancel | off
    max_wall: float | None = None
    max_tres_per_user: Resources | None = None
    max_tres_per_job: Resources | None = None
    grp_tres: Resources | None = None
    max_submit_jobs_per_user: int | None = None
    max_jobs_per_user: int | None = None
    usage_factor: float = 1.0


class PriorityFactors(Struct, kw_only=True, omit_defaults=True):
    """Weighted factor contributions, as ``sprio`` shows them."""

    age: float = 0.0
    fairshare: float = 0.0
    qos: float = 0.0
    job_size: float = 0.0
    partition: float = 0.0
    assoc: float = 0.0
    nice: float = 0.0
    tres: float = 0.0


class Job(Struct, kw_only=True, omit_defaults=True, gc=False):
    # gc=False: a Job holds only strings, numbers, a str list, a str->float dict and
    # PriorityFactors, so it can never be part of a reference cycle. Untracked, the
    # 100k Jobs of a large queue are not rescanned by every collection after a refresh
    # (about 0.1 s each time at that size).
    id: str
    name: str = ""
    array_parent: str | None = None
    array_task: str | None = None
    user: str = ""
    team: str = ""
    qos: str = "normal"
    partition: str | None = None
    state: str = PENDING
    request: Resources = {}  # total over all nodes
    nodes_requested: int = 1
    time_limit: float | None = None  # seconds; None = unlimited
    submit_time: float = 0.0
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    priority: float | None = None
    factors: PriorityFactors | None = None
    reason: str | None = None  # pending reason, source's words
    nodes: list[str] = []
    estimated_start: float | None = None  # the source's own backfill estimate
    dependency: str | None = None
    qos_class: str | None = None  # Kubernetes Guaranteed / Burstable / BestEffort
    gang: str | None = None  # jobs sharing a gang id start together or not at all
    queue_position: int | None = None  # 0 = next in its queue (Kueue visibility API)
    local_queue_position: int | None = None  # the same within its LocalQueue


class SourceStatus(Struct, kw_only=True, omit_defaults=True):
    """Health of one command or query behind a snapshot."""

    name: str
    ok: bool = True
    latency_ms: float | None = None
    error: str | None = None
    at: float | None = None


class Series(Struct, kw_only=True, omit_defaults=True):
    """A utilization time series (Prometheus): one label set, many points."""

    metric: str
    labels: dict[str, str] = {}
    points: list[tuple[float, float]] = []


class Snapshot(Struct, kw_only=True, omit_defaults=True):
    schema_version: int = SCHEMA_VERSION
    cluster: str = ""
    source: str = ""
    taken_at: float = 0.0
    nodes: list[Node] = []
    partitions: list[Partition] = []
    teams: list[Team] = []
    qos: list[QoS] = []
    jobs: list[Job] = []
    utilization: list[Series] = []
    status: list[SourceStatus] = []
    warnings: list[str] = []
    stale: bool = False
    stale_reason: str | None = None
    meta: dict[str, str] = field(default_factory=dict)


_msgpack_encoder = msgspec.msgpack.Encoder()
_msgpack_decoder = msgspec.msgpack.Decoder(Snapshot)
_json_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder(Snapshot)


def to_msgpack(snapshot: Snapshot) -> bytes:
    return _msgpack_encoder.encode(snapshot)


def from_msgpack(data: bytes) -> Snapshot:
    return _msgpack_decoder.decode(data)


def to_json(snapshot: Snapshot) -> bytes:
    return _json_encoder.encode(snapshot)


def from_json(data: bytes | str) -> Snapshot:
    return _json_decoder.decode(data)
