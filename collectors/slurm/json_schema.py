"""msgspec Structs for ``squeue/sinfo/sacct --json`` of both schema generations.

* 22.05: plugin ``openapi/v0.0.38`` (``openapi/dbv0.0.38`` for sacct) — plain numbers.
* 23.02+: ``data_parser/v0.0.39`` … ``v0.0.42`` — numbers wrapped as
  ``{"set": true, "infinite": false, "number": N}``, states as lists.

Only the fields the collector maps are declared; msgspec skips the rest without
building them, which is where the speed against json+dicts comes from."""

from __future__ import annotations

import msgspec
from msgspec import Struct


class Num(Struct, gc=False):
    """A 23.02+ wrapped number. ``set=false`` means "no value"; ``infinite`` means unlimited."""

    set: bool = True
    infinite: bool = False
    # None when absent or null: with set true that is a broken record (json_decode.num
    # refuses it), not the 0 a default would silently make of it.
    number: float | None = None


# gc=False: decoded JSON is a tree, never a cycle, and 100k tracked objects make the
# collector pay for garbage-collection passes while decoding.

# Fields that are wrapped in one release and plain in another decode as either.
AnyNum = int | float | Num | None
AnyStates = str | list[str] | None


# ---- meta --------------------------------------------------------------------------
class Version(Struct, gc=False):
    major: int | str = 0
    minor: int | str = 0
    micro: int | str = 0


class SlurmInfo(Struct, gc=False):
    version: Version | None = None
    release: str | None = ""
    cluster: str | None = ""


class Plugin(Struct, gc=False):
    type: str | None = ""
    name: str | None = ""
    data_parser: str | None = ""


class Meta(Struct, gc=False):
    plugin: Plugin | None = None
    plugins: Plugin | None = None  # 23.02 CLI output (squeue/sinfo/sacct --json)
    Slurm: SlurmInfo | None = None  # 22.05 spells it with a capital S
    slurm: SlurmInfo | None = None


class Envelope(Struct, gc=False):
    """The outer document; the payload stays raw until the version is known."""

    meta: Meta | None = None
    errors: list[msgspec.Raw] | None = []
    warnings: list[msgspec.Raw] | None = []
    jobs: msgspec.Raw = msgspec.Raw()
    nodes: msgspec.Raw = msgspec.Raw()
    sinfo: msgspec.Raw = msgspec.Raw()


class Message(Struct, gc=False):
    error: str | None = ""
    description: str | None = ""
    source: str | None = ""
    error_number: int | None = None


# ---- squeue --json -----------------------------------------------------------------
class SqueueJob38(Struct, kw_only=True, gc=False):
    """Only what _jobs38 maps, in the order squeue 22.05 prints the keys.

    msgspec looks each key of a job up by comparing it with the declared fields,
    starting after the last one found: in document order a wanted key is found at the
    first try, while each of the ~90 unwanted keys is compared with every field. So
    every declared field costs decode time at 100k jobs, and so does a wrong order."""

    account: str | None = ""
    array_job_id: int | None = 0
    array_task_id: int | None = None
    array_task_string: str | None = ""
    dependency: str | None = ""
    eligible_time: int | None = 0
    end_time: int | None = 0
    features: str | None = ""  # the --constraint expression
    # One GRES string per node of the job, in node-list order: "gpu:a100:2(IDX:0-1)".
    gres_detail: list[str] | None = None
    job_id: int
    job_state: str | None = ""
    name: str | None = ""
    nodes: str | None = ""
    node_count: int | None = None
    partition: str | None = ""
    priority: int | None = None
    qos: str | None = ""
    resv_name: str | None = ""  # the advanced reservation it asked for
    shared: str | None = None  # "none" = --exclusive; "shared" = --oversubscribe
    start_time: int | None = 0
    state_reason: str | None = ""
    submit_time: int | None = 0
    time_limit: int | None = None  # minutes
    tres_req_str: str | None = ""
    user_name: str | None = ""


class SqueueJob39(Struct, gc=False):
    job_id: int
    name: str | None = ""
    account: str | None = ""
    user_name: str | None = ""
    qos: str | None = ""
    partition: str | None = ""
    job_state: AnyStates = None
    state_reason: str | None = ""
    priority: AnyNum = None
    array_job_id: AnyNum = None
    array_task_id: AnyNum = None
    array_task_string: str | None = ""
    array_max_tasks: AnyNum = None
    submit_time: AnyNum = None
    eligible_time: AnyNum = None
    start_time: AnyNum = None
    end_time: AnyNum = None
    time_limit: AnyNum = None
    node_count: AnyNum = None
    nodes: str | None = ""
    tres_req_str: str | None = ""
    dependency: str | None = ""
    # GPUs asked with --gpus / --gpus-per-node / --gpus-per-task, which 23.02+
    # leaves out of tres_req_str (real Slurm-web fixtures, 23.11 to 25.05).
    tres_per_job: str | None = ""
    tres_per_node: str | None = ""
    tres_per_task: str | None = ""
    tasks: AnyNum = None
    features: str | None = ""  # the --constraint expression
    resv_name: str | None = ""  # the advanced reservation it asked for
    # 23.02+: lists of flags; "exclusive": ["true"] or "shared": ["none"] = --exclusive
    shared: list[str] | str | None = None
    exclusive: list[str] | str | bool | None = None
    # One GRES string per node of the job, in node-list order: "gpu:h100:4(IDX:0-3)".
    gres_detail: list[str] | None = None


# ---- sinfo --json ------------------------------------------------------------------
class SinfoNode38(Struct, gc=False):
    name: str
    state: str | None = ""
    state_flags: list[str] | None = []
    partitions: list[str] | None = []
    cpus: int | None = 0
    alloc_cpus: int | None = 0
    real_memory: int | None = 0
    alloc_memory: int | None = 0
    gres: str | None = ""
    gres_used: str | None = ""
    tres: str | None = ""
    tres_used: str | None = ""
    reason: str | None = ""
    active_features: str | None = ""  # "h100,ib"


class SinfoNode39(Struct, gc=False):
    """A node record (``nodes`` array), as 23.02+ ``scontrol --json show node`` prints it."""

    name: str
    state: AnyStates = None
    partitions: list[str] | None = []
    cpus: AnyNum = None
    alloc_cpus: AnyNum = None
    real_memory: AnyNum = None
    alloc_memory: AnyNum = None
    gres: str | None = ""
    gres_used: str | None = ""
    tres: str | None = ""
    tres_used: str | None = ""
    reason: str | None = ""
    active_features: list[str] | str | None = None  # 23.11+: a list


class GroupNodes(Struct, gc=False):
    nodes: list[str] | None = []
    total: AnyNum = None


class GroupNodeState(Struct, gc=False):
    state: AnyStates = None


class GroupCpus(Struct, gc=False):
    allocated: AnyNum = None
    total: AnyNum = None


class GroupMemory(Struct, gc=False):
    maximum: AnyNum = None
    allocated: AnyNum = None


class GroupPartition(Struct, gc=False):
    name: str | None = ""


class GroupGres(Struct, gc=False):
    total: str | None = ""
    used: str | None = ""


class GroupReason(Struct, gc=False):
    description: str | None = ""


class GroupFeatures(Struct, gc=False):
    total: str | None = ""
    active: str | None = ""


class SinfoGroup(Struct, gc=False):
    """One row of 23.02+ ``sinfo --json``: a partition x node-group, like a sinfo line."""

    nodes: GroupNodes | None = None
    node: GroupNodeState | None = None
    cpus: GroupCpus | None = None
    memory: GroupMemory | None = None
    partition: GroupPartition | None = None
    gres: GroupGres | str | None = None
    reason: GroupReason | str | None = None
    features: GroupFeatures | None = None


# ---- sacct --json ------------------------------------------------------------------
class AcctState(Struct, gc=False):
    current: AnyStates = None
    reason: str | None = ""


class AcctTime(Struct, gc=False):
    elapsed: AnyNum = None
    eligible: AnyNum = None
    end: AnyNum = None
    start: AnyNum = None
    submission: AnyNum = None
    limit: AnyNum = None


class AcctTres(Struct, gc=False):
    type: str | None = ""
    name: str | None = None
    count: AnyNum = None


class AcctTresSet(Struct, gc=False):
    allocated: list[AcctTres] | None = []
    requested: list[AcctTres] | None = []


class AcctArray(Struct, gc=False):
    job_id: AnyNum = None
    task_id: AnyNum = None
    task: str | None = None


class AcctJob(Struct, gc=False):
    """One ``sacct --json`` job; the same names in dbv0.0.38 and data_parser v0.0.39+."""

    job_id: int
    name: str | None = ""
    account: str | None = ""
    user: str | None = ""
    qos: str | None = ""
    partition: str | None = ""
    nodes: str | None = ""
    state: AcctState | None = None
    time: AcctTime | None = None
    tres: AcctTresSet | None = None
    array: AcctArray | None = None
    priority: AnyNum = None
    constraints: str | None = ""  # the --constraint expression


class Squeue38(Struct, gc=False):
    """The whole document in one pass when the version could be read up front."""

    meta: Meta | None = None
    errors: list[msgspec.Raw] | None = []
    warnings: list[msgspec.Raw] | None = []
    jobs: list[SqueueJob38] | None = []


class Squeue39(Struct, gc=False):
    meta: Meta | None = None
    errors: list[msgspec.Raw] | None = []
    warnings: list[msgspec.Raw] | None = []
    jobs: list[SqueueJob39] | None = []
