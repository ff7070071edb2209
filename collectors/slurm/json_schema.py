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
    number: float = 0


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
    release: str = ""
    cluster: str = ""


class Plugin(Struct, gc=False):
    type: str = ""
    name: str = ""
    data_parser: str = ""


class Meta(Struct, gc=False):
    plugin: Plugin | None = None
    plugins: Plugin | None = None  # 23.02 CLI output (squeue/sinfo/sacct --json)
    Slurm: SlurmInfo | None = None  # 22.05 spells it with a capital S
    slurm: SlurmInfo | None = None


class Envelope(Struct, gc=False):
    """The outer document; the payload stays raw until the version is known."""

    meta: Meta | None = None
    errors: list[msgspec.Raw] = []
    warnings: list[msgspec.Raw] = []
    jobs: msgspec.Raw = msgspec.Raw()
    nodes: msgspec.Raw = msgspec.Raw()
    sinfo: msgspec.Raw = msgspec.Raw()


class Message(Struct, gc=False):
    error: str = ""
    description: str = ""
    source: str = ""
    error_number: int | None = None


# ---- squeue --json -----------------------------------------------------------------
class SqueueJob38(Struct, kw_only=True, gc=False):
    """Only what _jobs38 maps, in the order squeue 22.05 prints the keys.

    msgspec looks each key of a job up by comparing it with the declared fields,
    starting after the last one found: in document order a wanted key is found at the
    first try, while each of the ~90 unwanted keys is compared with every field. So
    every declared field costs decode time at 100k jobs, and so does a wrong order."""

    account: str = ""
    array_job_id: int = 0
    array_task_id: int | None = None
    array_task_string: str = ""
    dependency: str = ""
    eligible_time: int = 0
    end_time: int = 0
    job_id: int
    job_state: str = ""
    name: str = ""
    nodes: str = ""
    node_count: int | None = None
    partition: str = ""
    priority: int | None = None
    qos: str = ""
    start_time: int = 0
    state_reason: str = ""
    submit_time: int = 0
    time_limit: int | None = None  # minutes
    tres_req_str: str = ""
    user_name: str = ""


class SqueueJob39(Struct, gc=False):
    job_id: int
    name: str = ""
    account: str = ""
    user_name: str = ""
    qos: str = ""
    partition: str = ""
    job_state: AnyStates = None
    state_reason: str = ""
    priority: AnyNum = None
    array_job_id: AnyNum = None
    array_task_id: AnyNum = None
    array_task_string: str = ""
    array_max_tasks: AnyNum = None
    submit_time: AnyNum = None
    eligible_time: AnyNum = None
    start_time: AnyNum = None
    end_time: AnyNum = None
    time_limit: AnyNum = None
    node_count: AnyNum = None
    nodes: str = ""
    tres_req_str: str = ""
    dependency: str = ""
    # GPUs asked with --gpus / --gpus-per-node / --gpus-per-task, which 23.02+
    # leaves out of tres_req_str (real Slurm-web fixtures, 23.11 to 25.05).
    tres_per_job: str = ""
    tres_per_node: str = ""
    tres_per_task: str = ""
    tasks: AnyNum = None


# ---- sinfo --json ------------------------------------------------------------------
class SinfoNode38(Struct, gc=False):
    name: str
    state: str = ""
    state_flags: list[str] = []
    partitions: list[str] = []
    cpus: int = 0
    alloc_cpus: int = 0
    real_memory: int = 0
    alloc_memory: int = 0
    gres: str = ""
    gres_used: str = ""
    tres: str = ""
    tres_used: str = ""
    reason: str = ""


class SinfoNode39(Struct, gc=False):
    """A node record (``nodes`` array), as 23.02+ ``scontrol --json show node`` prints it."""

    name: str
    state: AnyStates = None
    partitions: list[str] = []
    cpus: AnyNum = None
    alloc_cpus: AnyNum = None
    real_memory: AnyNum = None
    alloc_memory: AnyNum = None
    gres: str = ""
    gres_used: str = ""
    tres: str = ""
    tres_used: str = ""
    reason: str = ""


class GroupNodes(Struct, gc=False):
    nodes: list[str] = []
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
    name: str = ""


class GroupGres(Struct, gc=False):
    total: str = ""
    used: str = ""


class GroupReason(Struct, gc=False):
    description: str = ""


class SinfoGroup(Struct, gc=False):
    """One row of 23.02+ ``sinfo --json``: a partition x node-group, like a sinfo line."""

    nodes: GroupNodes | None = None
    node: GroupNodeState | None = None
    cpus: GroupCpus | None = None
    memory: GroupMemory | None = None
    partition: GroupPartition | None = None
    gres: GroupGres | str | None = None
    reason: GroupReason | str | None = None


# ---- sacct --json ------------------------------------------------------------------
class AcctState(Struct, gc=False):
    current: AnyStates = None
    reason: str = ""


class AcctTime(Struct, gc=False):
    elapsed: AnyNum = None
    eligible: AnyNum = None
    end: AnyNum = None
    start: AnyNum = None
    submission: AnyNum = None
    limit: AnyNum = None


class AcctTres(Struct, gc=False):
    type: str = ""
    name: str | None = None
    count: AnyNum = None


class AcctTresSet(Struct, gc=False):
    allocated: list[AcctTres] = []
    requested: list[AcctTres] = []


class AcctArray(Struct, gc=False):
    job_id: AnyNum = None
    task_id: AnyNum = None
    task: str | None = None


class AcctJob(Struct, gc=False):
    """One ``sacct --json`` job; the same names in dbv0.0.38 and data_parser v0.0.39+."""

    job_id: int
    name: str = ""
    account: str = ""
    user: str = ""
    qos: str = ""
    partition: str = ""
    nodes: str = ""
    state: AcctState | None = None
    time: AcctTime | None = None
    tres: AcctTresSet | None = None
    array: AcctArray | None = None
    priority: AnyNum = None


class Squeue38(Struct, gc=False):
    """The whole document in one pass when the version could be read up front."""

    meta: Meta | None = None
    errors: list[msgspec.Raw] = []
    warnings: list[msgspec.Raw] = []
    jobs: list[SqueueJob38] = []


class Squeue39(Struct, gc=False):
    meta: Meta | None = None
    errors: list[msgspec.Raw] = []
    warnings: list[msgspec.Raw] = []
    jobs: list[SqueueJob39] = []
