"""The scheduling policy the core runs with; every setting is described in docs/policy.md.

The Rust core decodes the msgpack of this Struct (src/policy.rs mirrors it);
a value the core does not know raises ValueError naming the setting.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import Struct

FairShareMode = Literal["classic", "fair_tree"]
BackfillMode = Literal["none", "easy", "conservative"]
PlacementMode = Literal["best_fit", "spread", "consecutive"]
PreemptMode = Literal["requeue", "suspend", "cancel"]
QuotaMode = Literal["enforce", "max_only", "off"]
PassesMode = Literal["grid", "events"]
PriorityMode = Literal["computed", "source"]
RuntimesMode = Literal["limit", "estimate"]


class PriorityWeights(Struct, kw_only=True, forbid_unknown_fields=True):
    """Slurm's PriorityWeight*: priority = Σ weight × factor, factors in [0, 1]."""

    age: float = 1000.0
    fairshare: float = 10000.0
    qos: float = 1000.0
    job_size: float = 0.0
    partition: float = 0.0


class Policy(Struct, kw_only=True, forbid_unknown_fields=True):
    weights: PriorityWeights = msgspec.field(default_factory=PriorityWeights)
    max_age: float = 7 * 86400.0  # seconds until the age factor saturates at 1
    favor_small: bool = False  # job-size factor rewards small jobs instead of large
    fairshare: FairShareMode = "classic"
    usage_half_life: float = 7 * 86400.0  # seconds; decay of recorded usage
    backfill: BackfillMode = "easy"
    bf_window: float = 86400.0  # seconds ahead that reservations are planned
    bf_resolution: float = 60.0  # seconds; scheduling passes and reservations snap to it
    bf_max_job_test: int = 100  # reservations per pass under conservative backfill
    placement: PlacementMode = "best_fit"
    preemption: bool = True
    preempt_mode: PreemptMode = "requeue"
    strict_team_fifo: bool = False  # the seed article's order: per-team FIFO by submit time
    quota: QuotaMode = "enforce"
    passes: PassesMode = "grid"  # events: a pass at each job end or arrival, not on the grid
    main_pass: bool = False  # strict-priority main pass per partition before backfill
    # Seconds from an event to the pass that answers it (passes "events"): the ends
    # within that moment are seen together and their successors start in priority order.
    pass_delay: float = 0.0
    priority: PriorityMode = "computed"  # source: the snapshot's Job.priority, aged
    runtimes: RuntimesMode = "estimate"  # limit: ignore Job.runtime_estimate
    # Seconds between fair-share recalculations over the horizon (priority "source",
    # fairshare "fair_tree", the snapshot's share tree); 0: factors stay as reported.
    fairshare_period: float = 0.0
    # A reservation takes capacity that frees up by its start before capacity idle now,
    # so the idle capacity stays for backfill (textbook EASY; docs/policy.md).
    reserve_busy_first: bool = False
    # A backfill reservation holds its nodes whole over its span, not the job's share
    # of them (Slurm's backfill does: docs/policy.md).
    reserve_whole_nodes: bool = False
    # A reservation starts when its job first fits, its span rounded down to the
    # bf_resolution grid at both ends; otherwise starts snap up to the grid (docs/policy.md).
    floor_to_grid: bool = False
    # Seconds a job requeued by preemption waits before it may start again (Slurm sets
    # its begin time that far ahead: AuthInfo's cred_expire, 120 s by default).
    requeue_delay: float = 0.0


_encoder = msgspec.msgpack.Encoder()


def encode_policy(policy: Policy | bytes | None) -> bytes:
    if policy is None:
        return _encoder.encode(Policy())
    if isinstance(policy, bytes | bytearray | memoryview):
        return bytes(policy)
    return _encoder.encode(policy)
