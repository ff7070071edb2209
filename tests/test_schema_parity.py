"""The snapshot schema is written twice: collectors/model.py (msgspec, what every source
fills) and scheduler_core/src/wire.rs (serde, what the core reads, by field name). This
holds the two together field by field: every field the core reads exists in the model
under that name (a rename on one side would silently leave the core with defaults), and
every model field the core does not read is listed here with why, so that a new field
is a decision, not an accident."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quotatop import scheduler_core
from quotatop.collectors import model

WIRE = Path(__file__).resolve().parents[1] / "scheduler_core" / "src" / "wire.rs"

# wire struct -> the model class it decodes
PAIRS = {
    "WNode": model.Node, "WPartition": model.Partition, "WFairShare": model.FairShare,
    "WTeam": model.Team, "WQoS": model.QoS, "WFactors": model.PriorityFactors,
    "WLimit": model.Limit, "WShare": model.ShareNode, "WJob": model.Job,
    "WSnapshot": model.Snapshot,
}

# Fields the core reads that are not in the model class, and where they come from.
CORE_ONLY = {
    "WJob": {"duration"},  # a simulation input's true run time (scheduler_core.SimJob)
}

# Model fields the core does not read: shown by the views, or used above the core.
NOT_READ = {
    # What the views show; the core places by capacity, allocation, state and features.
    "Node": {"allocatable", "gpus_used_indices", "labels", "taints", "reason"},
    # Shown; a down partition's nodes are down themselves, a job's limit is its own.
    "Partition": {"state", "max_time", "priority_tier", "default"},
    # sshare's columns as shown; the core's Fair Tree reads Snapshot.shares.
    "FairShare": {"raw_shares", "norm_shares", "effective_usage", "factor", "level_fs"},
    # The core recomputes usage from the running jobs; notes and the objects the quotas
    # are set on (for whatif's commands) are for the views.
    "Team": {"borrowed", "source_notes", "usage", "quota_objects"},
    # Group limits reach the core as Snapshot.limits (collectors/slurm/limits.py); flags
    # and UsageFactor are shown, not modelled.
    "QoS": {"flags", "grp_tres", "usage_factor"},
    # sprio columns the core does not weigh (assoc, nice, TRES) are shown only.
    "PriorityFactors": {"assoc", "nice", "tres"},
    "Limit": set(),
    "ShareNode": {"factor"},  # sshare's factor now, shown; the core ranks from usage
    # Shown (name, reason, dependency, arrays, the end), or read beside the core:
    # the scheduler's own estimate and Kueue's LocalQueue position (predict rows).
    "Job": {"array_parent", "array_task", "dependency", "end_time", "estimated_start",
            "local_queue_position", "name", "reason",
            # The GPU indices a job holds: joined to DCGM's series (collectors/gpu_util.py)
            # for the views; the core counts GPUs from request.
            "gpus"},
    # Source health and identity for the views; `scheduler` becomes the core's Policy
    # in Python (scheduler_core/site.py site_policy), not through the wire.
    "Snapshot": {"cluster", "meta", "scheduler", "schema_version", "source", "stale",
                 "stale_reason", "status", "utilization", "warnings",
                 "gpu_util"},  # per-job GPU utilization: shown and detected, never scheduled
}


def wire_fields() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    name = None
    for line in WIRE.read_text().splitlines():
        if m := re.match(r"pub struct (W\w+)", line):
            name = m.group(1)
            out[name] = set()
        elif line.startswith("}"):
            name = None
        elif name and (m := re.match(r"    pub (\w+):", line)):
            out[name].add(m.group(1))
    return out


@pytest.mark.parametrize("wire", sorted(PAIRS))
def test_every_field_the_core_reads_is_in_the_model(wire: str) -> None:
    fields = wire_fields()[wire]
    assert fields, f"{wire} not found in wire.rs"
    have = set(PAIRS[wire].__struct_fields__)
    missing = fields - have - CORE_ONLY.get(wire, set())
    assert not missing, f"wire.rs {wire} reads {sorted(missing)}: not fields of " \
                        f"model.{PAIRS[wire].__name__}"


@pytest.mark.parametrize("wire", sorted(PAIRS))
def test_every_model_field_is_read_or_listed_as_not_read(wire: str) -> None:
    cls = PAIRS[wire]
    unread = set(cls.__struct_fields__) - wire_fields()[wire]
    listed = NOT_READ.get(cls.__name__, set())
    assert unread <= listed, (f"model.{cls.__name__} fields {sorted(unread - listed)} are "
                              f"not read by the core: read them in wire.rs or list them in "
                              f"NOT_READ with why")
    assert listed <= unread, f"NOT_READ lists {sorted(listed - unread)}: the core reads them"


def test_the_simulation_input_carries_the_core_only_fields() -> None:
    assert "duration" in scheduler_core.SimJob.__struct_fields__
