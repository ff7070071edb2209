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
# Ends that keep their own names (a user asks "why did it die?"): a time-out is not a
# crash, a node failure is not the job's fault.
TIMEOUT = "timeout"
NODE_FAIL = "node_fail"
OUT_OF_MEMORY = "out_of_memory"
BOOT_FAIL = "boot_fail"
DEADLINE = "deadline"
ACTIVE_STATES = frozenset({RUNNING, SUSPENDED})
TERMINAL_STATES = frozenset(
    {COMPLETED, FAILED, CANCELLED, PREEMPTED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL,
     DEADLINE}
)


class Partition(Struct, kw_only=True, omit_defaults=True):
    name: str
    nodes: list[str] = []
    state: str = "up"
    max_time: float | None = None  # seconds; None = unlimited
    priority_tier: int = 0
    priority_job_factor: int = 0
    default: bool = False
    qos: str | None = None  # the partition's own QoS: its limits apply to every job in it


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
    features: list[str] = []  # what a job's constraint can ask for (Slurm features)


class FairShare(Struct, kw_only=True, omit_defaults=True):
    """Fair-share state of one account/team, as ``sshare -l`` reports it."""

    raw_shares: float | None = None
    norm_shares: float | None = None
    raw_usage: float | None = None
    effective_usage: float | None = None
    factor: float | None = None  # F = 2^(-U/S) or the Fair Tree rank factor
    level_fs: float | None = None


class TeamPreemption(Struct, kw_only=True, omit_defaults=True):
    """Whom a team's pending jobs may preempt, as its source states it (Kueue: a
    ClusterQueue's ``spec.preemption``). A team with one follows the staged victim
    search of docs/core.md ("Stated preemption"); a team without keeps the QoS and
    reclaim rules."""

    # never | lower_priority | lower_or_newer_equal: the team's own running jobs of
    # lower priority (or of equal priority, submitted after the preemptor)
    within: str = "lower_priority"
    # never | lower_priority | any: the jobs of borrowing teams of its cohort
    reclaim: str = "any"
    # never | lower_priority: other teams' jobs of lower priority while it borrows
    borrow_within: str = "never"
    # with borrow_within: only jobs of priority at most this (None: any lower)
    borrow_max_priority: float | None = None


class QuotaObject(Struct, kw_only=True, omit_defaults=True):
    """The object a team's quota is set on, as its source names it, so that a command
    to change the quota (``quotatop whatif``) patches that object: a Kueue
    ``clusterqueue`` or a namespace's ``resourcequota``. Shown, never read by the core."""

    kind: str  # clusterqueue | resourcequota
    name: str
    namespace: str = ""  # a resourcequota's namespace
    # The model's resource -> the object's own key for it: "gpu" -> "nvidia.com/gpu" (a
    # ClusterQueue's resource name) or "requests.nvidia.com/gpu" (a quota's spec.hard key).
    keys: dict[str, str] = {}
    # A ClusterQueue's resource -> the flavors that cover it (a resource several flavors
    # cover has a quota per flavor: one number cannot be written to all of them).
    flavors: dict[str, list[str]] = {}


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
    # Part of `usage` that no job of the snapshot holds (Kueue: admitted workloads in
    # namespaces this reader cannot list). The core counts it against the team's quota
    # for the whole horizon, so a prediction starts from the scheduler's own usage.
    unseen_usage: Resources = {}
    per_job_limit: Resources | None = None  # LimitRange max / MaxTRESPerJob
    per_user_limit: Resources | None = None
    max_wall: float | None = None
    max_submit_jobs: int | None = None
    preemption: TeamPreemption | None = None  # None: QoS and reclaim rules (docs/core.md)
    # The team's quotas name every resource its jobs may use (Kueue: a ClusterQueue
    # admits no workload asking for a resource it does not cover); a job asking for
    # one they do not name never starts. False: unnamed resources are not limited.
    quota_exhaustive: bool = False
    source_notes: list[str] = []  # e.g. "Slurm has no guarantee: max only"
    quota_objects: list[QuotaObject] = []  # where guarantee and max are set (Kubernetes)


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
    preempt_exempt_time: float | None = None  # seconds a job runs before it may be preempted
    grace_time: float | None = None  # seconds a victim is given to end after the signal
    flags: list[str] = []  # e.g. "OverPartQOS": the job's QoS limits win over the partition's


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
    # PriorityFactors (and ``gpus``: a str -> int-list dict), so it can never be part of
    # a reference cycle. Untracked, the
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
    constraint: str | None = None  # node features the job needs: "a100", "a|b", "a&b"
    exclusive: bool = False  # the job takes its nodes whole
    runtime_estimate: float | None = None  # seconds the job is expected to run in all
    runtime_basis: str | None = None  # how that estimate was made, in words
    # The run times (seconds) of the past runs the estimate was made from, newest first:
    # what the source knows of how long this job may run, which the core samples to
    # give a start window rather than one instant (docs/predict.md, "Start windows").
    runtime_history: list[float] = []
    # True where those runs are of other work of the same user (Slurm: the same shape or
    # account, not the same request): they say less, and the windows draw half their
    # run times from the stated prior instead.
    runtime_history_weak: bool = False
    reservation: str | None = None  # the advanced reservation it asked for (--reservation)
    # The source will not start the job as things stand, in its words (Kueue: its
    # LocalQueue does not exist); the core never starts it and says so.
    held: str | None = None
    # The GPUs the job holds, node -> GPU indices (Slurm: squeue's gres_detail IDX, one
    # entry per node of the job); what DCGM's per-GPU series are joined on
    # (collectors/gpu_util.py). {} = the source does not say.
    gpus: dict[str, list[int]] = {}


class JobGpuUtil(Struct, kw_only=True, omit_defaults=True):
    """One job's GPUs as the GPU exporter saw them over [since, until] (docs/gpu-util.md).

    GPU-seconds count each GPU apart: 4 GPUs held for an hour are 14,400. A sample's value
    holds from its time to the next sample (at most ``max_hold`` seconds), so ``busy`` is
    the integral of utilization over the time the job held the GPU and a sample covered it.
    """

    job: str
    user: str = ""
    team: str = ""
    gpus: list[str] = []  # "node:index" of each GPU the job held
    since: float = 0.0  # the window: seconds since the epoch
    until: float = 0.0
    allocated_gpu_seconds: float = 0.0  # held within the window
    observed_gpu_seconds: float = 0.0  # of those, covered by a utilization sample
    busy_gpu_seconds: float = 0.0  # integral of util/100 over the observed time
    mean_util_percent: float | None = None  # busy / observed; None: no sample covered it
    mean_fb_mib: float | None = None  # framebuffer used, time-weighted mean per GPU
    peak_fb_mib: float | None = None
    engine_active_percent: float | None = None  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, where served


class Reservation(Struct, kw_only=True, omit_defaults=True):
    """An advanced reservation (Slurm's ``scontrol show reservation``): over
    [start, end) its nodes take only jobs that request it by name, and those
    run only there, from its start. Whole nodes: a reservation of part of a
    node's cores is modelled as the node."""

    name: str
    nodes: list[str] = []
    start: float = 0.0
    end: float | None = None  # None: no end
    users: list[str] = []
    accounts: list[str] = []
    partition: str | None = None
    flags: list[str] = []
    state: str = ""  # "active" or "inactive", as the source says


class Limit(Struct, kw_only=True, omit_defaults=True):
    """One limit as the scheduler holds it: where it is set and what it counts.

    ``scope`` is the object the limit is set on: ``qos`` (a QoS), ``account`` (an
    account, inherited by its sub-accounts), ``user`` (one user's association in an
    account), ``partition`` (every job in a partition). ``owner`` names that object
    (for ``user``: ``"account/user"``). ``per`` says what is counted against it:
    ``group`` (every job under the owner together), ``user`` (each user apart),
    ``account`` (each account apart), ``job`` (each job alone).

    Which of several limits of the same kind wins for a job (a job QoS over its
    partition's unless OverPartQOS; QoS over association) is the core's to decide:
    ``rank`` orders them, lower wins, as the source's precedence says.
    """

    scope: str  # qos | account | user | partition
    owner: str
    per: str = "group"  # group | user | account | job
    tres: Resources = {}  # running jobs' resources (GrpTRES, MaxTRESPerUser, MaxTRES)
    jobs: int | None = None  # running jobs (GrpJobs, MaxJobsPerUser, MaxJobs)
    submit: int | None = None  # pending + running jobs (MaxSubmitJobs)
    wall: float | None = None  # seconds per job (MaxWall)
    rank: int = 0


class SchedulerConfig(Struct, kw_only=True, omit_defaults=True):
    """The site's own scheduler settings, in the source's neutral terms, so that the
    core predicts what *this* scheduler does. ``None`` = the source does not say."""

    priority: str | None = None  # multifactor | basic (submit order)
    weights: dict[str, float] = {}  # age, fairshare, qos, job_size, partition, assoc, …
    max_age: float | None = None  # seconds until the age factor saturates
    usage_half_life: float | None = None
    fairshare: str | None = None  # fair_tree | classic
    favor_small: bool | None = None
    backfill: str | None = None  # none | easy | conservative
    bf_interval: float | None = None  # seconds between backfill passes
    bf_resolution: float | None = None  # seconds; the grid backfill plans on
    bf_window: float | None = None  # seconds ahead that backfill plans
    bf_max_job_test: int | None = None
    bf_continue: bool | None = None
    queue_depth: int | None = None  # jobs the event-driven pass looks at
    sched_interval: float | None = None  # seconds between full main passes
    preemption: str | None = None  # off | qos | partition_priority
    preempt_mode: str | None = None  # requeue | suspend | cancel | off
    preempt_exempt_time: float | None = None
    raw: dict[str, str] = {}  # the settings as the source printed them, for the UI
    calc_period: float | None = None  # seconds between fair-share recalculations
    # What a running job adds to its association's fair-share usage per second, per
    # unit of each resource (Slurm TRESBillingWeights); {} = one per CPU.
    billing: dict[str, float] = {}
    # How nodes are picked for a job: "consecutive" (runs of consecutive nodes, the
    # tightest first, best fit by free CPUs), None = the core's default best fit.
    placement: str | None = None
    # Seconds a job requeued by preemption waits before it may start again (Slurm's
    # AuthInfo cred_expire); None = the source does not say.
    requeue_delay: float | None = None


class ShareNode(Struct, kw_only=True, omit_defaults=True):
    """One association of the fair-share tree as the source reports it (sshare -a -l):
    an account (``user`` None) or a user within an account. The core ranks the tree
    again as usage accrues over the prediction's horizon (Fair Tree)."""

    account: str
    user: str | None = None
    parent: str | None = None  # an account's parent account; None under the root
    raw_shares: float = 1.0
    raw_usage: float = 0.0  # decayed usage, resource-seconds as the source bills them
    factor: float | None = None  # the source's fair-share factor now, in [0, 1]


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
    limits: list[Limit] = []
    scheduler: SchedulerConfig | None = None
    shares: list[ShareNode] = []
    reservations: list[Reservation] = []
    utilization: list[Series] = []
    gpu_util: list[JobGpuUtil] = []  # per job, from the GPU exporter (collectors/gpu_util.py)
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
