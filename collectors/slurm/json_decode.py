"""Decode ``squeue/sinfo/sacct --json`` of either schema generation into model objects.

The version comes from ``meta``: 22.05 names its plugin ``openapi/v0.0.38``, 23.02+
names a ``data_parser/v0.0.NN``. A version newer (or older) than any known is read
as the closest known one, with a warning in the snapshot."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec

from quotatop.collectors.gc_pause import gc_paused
from quotatop.collectors.model import (
    BOOT_FAIL,
    CANCELLED,
    COMPLETED,
    DEADLINE,
    FAILED,
    NODE_FAIL,
    OUT_OF_MEMORY,
    PENDING,
    PREEMPTED,
    RUNNING,
    SUSPENDED,
    TIMEOUT,
    Job,
    Node,
    Resources,
)
from quotatop.collectors.slurm import json_schema as js
from quotatop.collectors.slurm.errors import ParseError, SlurmReportedError
from quotatop.collectors.slurm.gres import parse_gres
from quotatop.collectors.slurm.hostlist import BOUND, HostBudget
from quotatop.collectors.slurm.tres import parse_tres

try:
    # Native (json_prune/, built into the core's extension by `pip install .` and `make
    # build`): drops the ~90 keys of each job the Structs do not declare before msgspec
    # reads them; without it (a core built before it carried the pruner), msgspec skips them.
    from quotatop.scheduler_core._core import prune_json_keys as _prune
except ImportError:  # pragma: no cover - an install without the native pruner
    _prune = None

KNOWN = (38, 39, 40, 41, 42)
_VERSION = re.compile(r"v0\.0\.(\d+)")
# TRES that are not resources a job holds; kept out of Job.request and Node capacity.
NOT_RESOURCES = frozenset({"node", "billing", "energy", "fs/disk", "vmem", "pages"})
# Slurm's NO_VAL / INFINITE sentinels when a release forgets to wrap them.
_SENTINEL = 0xFFFFFFFE

_STATES = {
    "PENDING": PENDING,
    "REQUEUED": PENDING,
    "REQUEUE_HOLD": PENDING,
    "REQUEUE_FED": PENDING,
    "RUNNING": RUNNING,
    "COMPLETING": RUNNING,
    "CONFIGURING": RUNNING,
    "SIGNALING": RUNNING,
    "STAGE_OUT": RUNNING,
    "RESIZING": RUNNING,
    "SUSPENDED": SUSPENDED,
    "STOPPED": SUSPENDED,
    "COMPLETED": COMPLETED,
    "CANCELLED": CANCELLED,
    "REVOKED": CANCELLED,
    "PREEMPTED": PREEMPTED,
    "FAILED": FAILED,
    # Ends that keep their own names: a time-out is not a crash.
    "TIMEOUT": TIMEOUT,
    "NODE_FAIL": NODE_FAIL,
    "BOOT_FAIL": BOOT_FAIL,
    "DEADLINE": DEADLINE,
    "OUT_OF_MEMORY": OUT_OF_MEMORY,
    "SPECIAL_EXIT": FAILED,
}
# Among a 23.02+ state list (["RUNNING", "COMPLETING"]) the base state is the one listed here.
_BASE = (
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
)


class Decoded(msgspec.Struct):
    version: int  # 38 … 42: the schema actually used to read the document
    release: str
    warnings: list[str]
    errors: list[str]
    # The ids of the job records skipped (named in warnings): another command's record
    # of the same job (sacct's history) must not stand in for a record refused here.
    refused: list[str] = []


_envelope = msgspec.json.Decoder(js.Envelope)
_messages = msgspec.json.Decoder(js.Message)


def _open(data: bytes, what: str) -> tuple[js.Envelope, Decoded]:
    try:
        env = _envelope.decode(data)
    except msgspec.DecodeError as exc:
        raise ParseError(f"{what} --json", data[:40], str(exc).splitlines()[0]) from None
    version, release, warnings = detect_version(env.meta, what)
    env.errors = env.errors or []
    return env, Decoded(
        version=version, release=release, warnings=warnings, errors=_messages_of(env.errors)
    )


def _messages_of(raws: list[msgspec.Raw] | None) -> list[str]:
    errors = []
    for raw in raws or ():
        try:
            m = _messages.decode(raw)
            errors.append(m.error or m.description or "error")
        except msgspec.DecodeError:
            errors.append(bytes(raw).decode(errors="replace")[:80])
    return errors


def detect_version(meta: js.Meta | None, what: str = "document") -> tuple[int, str, list[str]]:
    plugin = None if meta is None else meta.plugin or meta.plugins
    if meta is None or plugin is None:
        raise ParseError(f"{what} --json", "meta", "no meta.plugin: cannot tell the schema")
    label = plugin.data_parser or plugin.type or ""
    info = meta.slurm or meta.Slurm
    release = (info.release if info else "") or ""
    m = _VERSION.search(label)
    if m is None:
        raise ParseError(f"{what} --json", label, "unknown schema")
    found = int(m.group(1))
    if found in KNOWN:
        return found, release, []
    closest = min(KNOWN, key=lambda k: abs(k - found))
    return (
        closest,
        release,
        [f"{what}: schema v0.0.{found} unknown; read as v0.0.{closest} (fields may be missing)"],
    )


_raw_list = msgspec.json.Decoder(list[msgspec.Raw] | None)


def _payload(
    raw: msgspec.Raw, decoder: msgspec.json.Decoder, what: str, info: Decoded
) -> list[Any]:
    items: list[Any] = []
    if raw:
        try:
            items = decoder.decode(raw) or []
        except msgspec.DecodeError as exc:
            items = _one_by_one(raw, decoder, what, info, exc)

    # 22.05 exits 0 with an empty list and "errors" when slurmctld is down: that is an
    # outage, not an empty cluster.
    if info.errors and not items:
        raise SlurmReportedError(f"{what}: {info.errors[0]}")
    return items


class _Label(msgspec.Struct, gc=False):
    job_id: int | str | None = None
    name: str | None = None


_labels = msgspec.json.Decoder(_Label)


def _label(rec: msgspec.Raw) -> tuple[str, str | None]:
    """`` (job 12)`` or `` (node gpu01)`` for a record that could not be read whole:
    which one it was, where the record says (e.g. a time limit that is not a number);
    and the job's id, if it says one."""
    try:
        got = _labels.decode(rec)
    except msgspec.DecodeError:
        return "", None
    if got.job_id is not None:
        return f" (job {got.job_id})", str(got.job_id)
    return (f" (node {got.name})" if got.name else ""), None


def _one_by_one(
    raw: msgspec.Raw,
    decoder: msgspec.json.Decoder,
    what: str,
    info: Decoded,
    exc: msgspec.DecodeError,
) -> list[Any]:
    """The list read record by record after the whole failed: one odd record (a type
    this release prints differently) is skipped with a warning, not the whole answer.
    Bytes that are not a JSON list at all still fail the command."""
    try:
        records = _raw_list.decode(raw) or []
    except msgspec.DecodeError:
        raise ParseError(f"{what} --json", bytes(raw)[:40], str(exc).splitlines()[0]) from None
    out: list[Any] = []
    unread: list[str] = []
    for n, rec in enumerate(records):
        try:
            out.extend(decoder.decode(b"[" + bytes(rec) + b"]") or [])
        except msgspec.DecodeError as one:
            label, job_id = _label(rec)
            unread.append(f"#{n}{label}: {str(one).splitlines()[0]}")
            if job_id is not None:
                info.refused.append(job_id)
    skipped(what, unread, info.warnings, "unreadable ")
    return out


def _text_or(value: str | None) -> str:
    return value or ""


def num(value: object) -> float | None:
    """A plain or wrapped number; None when unset, infinite or a NO_VAL sentinel.

    Slurm's wrapper (data_parser): ``set: false`` is "no value" and ``infinite: true``
    is INFINITE, i.e. no limit (a time limit, a count) or not known: both None, as
    a plain NO_VAL is. A wrapper that says it is set but has no number is a broken
    record, not a zero: ValueError, which skips the record with that reason."""
    if value is None:
        return None
    if isinstance(value, js.Num):
        if not value.set or value.infinite:
            return None
        if value.number is None:
            raise ValueError("set, but no number")
        value = value.number
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or abs(value) >= _SENTINEL:
            return None
        return float(value)
    return None


def _not_negative(**values: float | int | None) -> None:
    """ValueError naming the first field below zero: a negative time limit, priority or
    node count is no Slurm value (its sentinels are large and positive), and kept it
    would run a job backwards in the core or count nodes off the cluster."""
    for field, v in values.items():
        if v is not None and v < 0:
            raise ValueError(f"negative {field.replace('_', ' ')} {v:g}")


# Slurm's uint32 counts and minutes (time limit, priority, node count): NO_VAL and
# INFINITE are the two values above the largest real one.
_UINT32_MAX = 0xFFFFFFFD
_UINT32_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF})
# The most nodes one job may ask for: the core refuses a whole snapshot above it
# (scheduler_core/src/cluster.rs, "nodes_requested … must be between 1 and 1000000"),
# so a record above it is refused here, alone.
MAX_NODES_REQUESTED = 1_000_000
# A time is an epoch second from 1970 to the end of year 9999: a job submitted before
# 1970 or after 9999 is no job, and a datetime cannot hold the latter (an OverflowError
# in whatever formats it). Slurm's NO_VAL/INFINITE (32 and 64 bit) mean "no time".
_MAX_EPOCH = 253_402_300_800.0  # 10000-01-01T00:00:00Z
_TIME_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})


def _plain(field: str, value: object) -> float | int | None:
    """The number inside Slurm's wrapper, None for "not set"; ValueError naming the
    field when the wrapper says infinite or is set without a number."""
    if isinstance(value, js.Num):
        if not value.set:
            return None
        if value.infinite:
            raise ValueError(f"{field} infinite")
        if value.number is None:
            raise ValueError("set, but no number")
        value = value.number
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        raise ValueError(f"{field} {value} is not a number")
    return value


def uint32(field: str, value: object, maximum: float = _UINT32_MAX) -> float | None:
    """A uint32 of Slurm's (minutes, a priority, a node count): None when unset,
    infinite (no limit) or a sentinel; ValueError naming the field when it is negative,
    not finite or above ``maximum``, which Slurm cannot hold (a record that cannot stand)."""
    label = field.replace("_", " ")
    if isinstance(value, js.Num) and value.infinite:
        return None  # INFINITE: no limit
    v = _plain(label, value)
    if v is None or v in _UINT32_SENTINELS:
        return None
    if v < 0:
        raise ValueError(f"negative {label} {v:g}")
    if v > maximum:
        raise ValueError(f"{label} {v:g} above {maximum:.0f}")
    return float(v)


def when(field: str, value: object) -> float | None:
    """An epoch time of a record: None when unset (0, ``set: false``, a sentinel);
    ValueError naming the field when it is infinite, not finite, before 1970 or after
    9999 (the record is skipped by name, as a negative time limit is)."""
    label = field.replace("_", " ")
    v = _plain(label, value)
    if not v or v in _TIME_SENTINELS:
        return None
    if v < 0:
        raise ValueError(f"{label} {v:g} before 1970")
    if v >= _MAX_EPOCH:
        raise ValueError(f"{label} {v:g} after year 9999")
    return float(v)


def base_state(value: str | list[str] | None) -> str:
    if isinstance(value, list):
        return next((s for s in value if s in _BASE), value[0] if value else "")
    return value or ""


def job_state(value: str | list[str] | None) -> str:
    return _STATES.get(base_state(value).upper(), PENDING)


@functools.lru_cache(maxsize=4096)
def _tres_cached(text: str) -> tuple[tuple[str, float], ...]:
    return tuple((k, v) for k, v in parse_tres(text).items() if k not in NOT_RESOURCES)


def resources(text: str) -> Resources:
    """TRES → Resources without node/billing; memoised because a queue repeats a few shapes."""
    return dict(_tres_cached(text))


def _none_if(text: str, *empty: str) -> str | None:
    return None if not text or text in empty else text


# ---- squeue ------------------------------------------------------------------------
_squeue38 = msgspec.json.Decoder(list[js.SqueueJob38])
_squeue39 = msgspec.json.Decoder(list[js.SqueueJob39])


# "gres/gpu:4", "gres/gpu:h100:1" (per job, per node), "gres/gpu=2" (per task, 25.05)
_GPU_PER = re.compile(r"gres/gpu(?::([^:=,]+))?[:=](\d+)(?=,|$)")


@functools.lru_cache(maxsize=256)
def _gpus_per(text: str) -> tuple[tuple[str, float], ...]:
    out: Resources = {}
    for m in _GPU_PER.finditer(text):
        for key in ("gpu", f"gpu:{m.group(1)}") if m.group(1) else ("gpu",):
            out[key] = out.get(key, 0.0) + int(m.group(2))
    return tuple(out.items())


def _with_gpus(request: Resources, j: js.SqueueJob39) -> Resources:
    """23.02+ leaves GPUs asked with --gpus, --gpus-per-node or --gpus-per-task out of
    tres_req_str (even where gres/gpu is an accounted TRES); they are in tres_per_*."""
    if "gpu" in request:
        return request
    for text, times in (
        (j.tres_per_job, 1.0),
        (j.tres_per_node, num(j.node_count) or 1.0),
        (j.tres_per_task, num(j.tasks) or 1.0),
    ):
        per = _gpus_per(text) if text else ()
        if per:
            request.update((k, v * times) for k, v in per)
            break
    return request


def _flags(value: object) -> set[str]:
    if isinstance(value, list):
        return {str(v).lower() for v in value}
    if isinstance(value, bool):
        return {"true"} if value else set()
    return {value.lower()} if isinstance(value, str) and value else set()


def _exclusive(j: js.SqueueJob39) -> bool:
    """--exclusive: 23.02+ says ``exclusive: ["true"]`` (or ``shared: ["none"]``)."""
    return "true" in _flags(j.exclusive) or "none" in _flags(j.shared)


def job_gpus(nodes: list[str], details: list[str] | None) -> dict[str, list[int]]:
    """node -> the GPU indices a job holds there, from squeue's ``gres_detail`` (one GRES
    string per node, in the order of the job's node list). {} when Slurm printed no IDX
    or the two lists do not pair up (a broken answer is not guessed at)."""
    if not details or len(details) != len(nodes):
        return {}
    out: dict[str, list[int]] = {}
    for node, text in zip(nodes, details, strict=True):
        idx = sorted({i for g in parse_gres(text) if g.name == "gpu" for i in (g.indices or ())})
        if idx:
            out[node] = idx
    return out


def _job(j: js.SqueueJob39, budget: HostBudget) -> Job:
    state = job_state(j.job_state)
    array_job = num(j.array_job_id)
    task = num(j.array_task_id)
    array_parent = array_task = None
    if array_job:
        array_parent = str(int(array_job))
        if task is not None:
            array_task = str(int(task))
        elif j.array_task_string:
            limit = num(j.array_max_tasks)
            array_task = j.array_task_string + (
                f"%{int(limit)}" if limit and "%" not in j.array_task_string else ""
            )
    limit_min = uint32("time_limit", j.time_limit)
    priority = uint32("priority", j.priority)
    node_count = uint32("node_count", j.node_count, MAX_NODES_REQUESTED)
    submit, eligible = when("submit_time", j.submit_time), when("eligible_time", j.eligible_time)
    start, end = when("start_time", j.start_time), when("end_time", j.end_time)
    nodes_text = j.nodes
    nodes = budget.expand(nodes_text) if nodes_text and state != PENDING else []
    return Job(
        id=str(j.job_id),
        name=j.name or "",
        array_parent=array_parent,
        array_task=array_task,
        user=j.user_name or "",
        team=j.account or "",
        qos=j.qos or "",
        partition=j.partition or None,
        state=state,
        request=_with_gpus(resources(j.tres_req_str or ""), j),
        nodes_requested=int(node_count or 1),
        time_limit=limit_min * 60 if limit_min is not None else None,
        submit_time=submit or 0.0,
        eligible_time=eligible,
        start_time=start if state != PENDING else None,
        end_time=end if state != PENDING else None,
        priority=priority,
        reason=_none_if(j.state_reason, "None"),
        # A pending job's start_time is Slurm's own (backfill) estimate.
        estimated_start=start if state == PENDING else None,
        nodes=nodes,
        dependency=_none_if(j.dependency or "", "(null)"),
        constraint=j.features or None,
        exclusive=_exclusive(j),
        reservation=j.resv_name or None,
        gpus=job_gpus(nodes, j.gres_detail),
    )


def _jobs39(items: list[js.SqueueJob39], info: Decoded) -> list[Job]:
    out: list[Job] = []
    bad: list[str] = []
    budget = HostBudget("squeue")
    for j in items:
        try:
            out.append(_job(j, budget))
        except (ParseError, ValueError, TypeError, OverflowError) as exc:
            bad.append(f"job {j.job_id}: {exc}")
            info.refused.append(str(j.job_id))
    skipped("squeue", bad, info.warnings)
    return _first_of_each_id(out, info.warnings)


def skipped(what: str, bad: list[str], warnings: list[str], kind: str = "") -> None:
    """One warning for the records skipped: how many, the first three reasons and how
    many more. A bound being hit (a hostlist's, an answer's) is named first, wherever
    its record was: it says the answer was too large, which a fourth reason would hide."""
    if not bad:
        return
    first = sorted(bad, key=lambda why: BOUND not in why)  # stable: the rest in order
    shown = "; ".join(why[:200] for why in first[:3])
    more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
    warnings.append(f"{what}: skipped {len(bad)} {kind}record(s): {shown}{more}")


def _first_of_each_id(jobs: list[Job], warnings: list[str]) -> list[Job]:
    """squeue's jobs with each id once: the first record kept, the others named in a
    warning. squeue lists a job once (an array task and a het component have ids of
    their own), so a second record is a broken answer; the core refuses a snapshot
    with two jobs of one id, which would lose every prediction for one bad record."""
    if len({j.id for j in jobs}) == len(jobs):  # the common case: one set, ~5 ms at 100k
        return jobs
    seen: set[str] = set()
    out: list[Job] = []
    dropped: list[str] = []
    for j in jobs:
        if j.id in seen:
            dropped.append(j.id)
            continue
        seen.add(j.id)
        out.append(j)
    warnings.append(f"squeue: skipped {len(dropped)} record(s) of a job id already listed "
                    f"(the first kept): {', '.join(dropped[:5])}"[:300])
    return out


def _numbers38(j: js.SqueueJob38) -> tuple[float | None, float | None, float | None]:
    """A 22.05 record's time limit, priority and node count off the fast path: a
    sentinel is no value; a value Slurm cannot hold is ValueError by name."""
    return (uint32("time_limit", j.time_limit), uint32("priority", j.priority),
            uint32("node_count", j.node_count, MAX_NODES_REQUESTED))


def _times38(j: js.SqueueJob38) -> tuple[float | None, ...]:
    """A 22.05 record's four times off the fast path (``when``: ValueError by name)."""
    return (when("submit_time", j.submit_time), when("eligible_time", j.eligible_time),
            when("start_time", j.start_time), when("end_time", j.end_time))


def _jobs38(items: list[js.SqueueJob38], info: Decoded | None = None) -> list[Job]:
    """The 22.05 jobs, where every number is plain: the hot path at 100k jobs.

    Per job only what differs per job is done here; TRES strings and hostlists, of
    which a queue has few distinct ones, are parsed once per distinct text."""
    out: list[Job] = []
    append = out.append
    requests: dict[str, Resources] = {}
    budget = HostBudget("squeue")
    states = _STATES
    bad: list[str] = []
    for j in items:
        # try costs nothing until it fires (3.11): one odd record is skipped, not the queue.
        try:
            state = states.get(j.job_state, PENDING)  # type: ignore[arg-type]
            tres = j.tres_req_str or ""
            request = requests.get(tres)
            if request is None:
                request = requests[tres] = dict(_tres_cached(tres))
            limit, priority, count = j.time_limit, j.priority, j.node_count
            if (limit is not None and not 0 <= limit <= _UINT32_MAX) \
                    or (priority is not None and not 0 <= priority <= _UINT32_MAX) \
                    or (count is not None and not 0 <= count <= MAX_NODES_REQUESTED):
                limit, priority, count = _numbers38(j)
            submit, eligible, start, end = j.submit_time, j.eligible_time, j.start_time, j.end_time
            if not (0 <= (submit or 0) < _SENTINEL and 0 <= (eligible or 0) < _SENTINEL
                    and 0 <= (start or 0) < _SENTINEL and 0 <= (end or 0) < _SENTINEL):
                submit, eligible, start, end = _times38(j)
            reason = j.state_reason
            dependency = j.dependency
            # At most 15 keywords: CPython compiles a call with more into one that builds
            # a dict of them first, which doubles what a Job costs. The fields that are
            # only set for some jobs (running, pending, array) are assigned below instead.
            job = Job(
                id=str(j.job_id),
                name=j.name or "",
                user=j.user_name or "",
                team=j.account or "",
                qos=j.qos or "",
                partition=j.partition or None,
                state=state,
                request=request.copy(),  # each Job owns its dict: callers may update it
                nodes_requested=int(count or 1),
                time_limit=limit * 60.0 if limit is not None else None,
                submit_time=float(submit) if submit else 0.0,
                eligible_time=float(eligible) if eligible else None,
                priority=float(priority) if priority is not None else None,
                reason=None if not reason or reason == "None" else reason,
                dependency=None if not dependency or dependency == "(null)" else dependency,
            )
            if state == PENDING:
                if start:
                    # A pending job's start_time is Slurm's own (backfill) estimate.
                    job.estimated_start = float(start)
            else:
                if start:
                    job.start_time = float(start)
                if end:
                    job.end_time = float(end)
                text = j.nodes
                if text:
                    hosts = budget.expand(text)
                    job.nodes = hosts
                    if j.gres_detail:
                        job.gpus = job_gpus(hosts, j.gres_detail)
            if j.array_job_id:
                job.array_parent = str(j.array_job_id)
                if j.array_task_id is not None:
                    job.array_task = str(j.array_task_id)
                elif j.array_task_string:
                    job.array_task = j.array_task_string
            if j.features:
                job.constraint = j.features
            if j.resv_name:
                job.reservation = j.resv_name
            if j.shared == "none":  # --exclusive
                job.exclusive = True
        except (ParseError, ValueError, TypeError, OverflowError) as exc:
            bad.append(f"job {j.job_id}: {exc}")
            if info is not None:
                info.refused.append(str(j.job_id))
            continue
        append(job)
    if info is not None:
        skipped("squeue", bad, info.warnings)
        return _first_of_each_id(out, info.warnings)
    return out


# Slurm's serializer escapes every "/": real 22.05 output says "openapi\/v0.0.38", and a
# hint missed here costs a second pass over the whole document.
_HINT = re.compile(
    rb'"(?:data_parser|type)"\s*:\s*"(?:data_parser\\?/|openapi\\?/(?:db)?)v0\.0\.(\d+)"'
)
_whole = {38: msgspec.json.Decoder(js.Squeue38), 39: msgspec.json.Decoder(js.Squeue39)}


def _sniff(data: bytes) -> int | None:
    """The schema version from the raw bytes (meta sits at one end of the document), so
    that a large queue is decoded in one pass instead of envelope first, jobs second."""
    for chunk in (data[:4096], data[-8192:]):
        m = _HINT.search(chunk)
        if m:
            return int(m.group(1))
    return None


def generation(version: int) -> int:
    """The Structs a schema version is read with: 38 for 22.05, 39 for every 23.02+ one."""
    return 38 if version == 38 else 39


def _wanted(job: type[msgspec.Struct]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(job)]


_KEEP = {38: _wanted(js.SqueueJob38), 39: _wanted(js.SqueueJob39)}


def pruned(data: bytes, gen: int) -> bytes:
    """The document with only the job keys the Structs declare, when the native pruner
    is there and the bytes are JSON; else the document as it is.

    msgspec compares each key it does not want with every declared field; at 100k
    jobs of ~110 keys that costs more than reading the bytes (bench/slurm_parse.py)."""
    if _prune is None:
        return data
    try:
        return _prune(data, "jobs", _KEEP[gen])
    except ValueError:
        return data  # not JSON: the typed decoder reads the original and names the problem


def _one_pass(data: bytes, hint: int) -> tuple[list[Job], Decoded] | None:
    gen = generation(hint)
    try:
        with gc_paused():
            # A decode error in the pruned bytes would cite their offsets: fall back
            # (return None) so that the two-pass path names the original's problem.
            doc = _whole[gen].decode(pruned(data, gen))
    except msgspec.DecodeError:
        return None  # the two-pass path names the problem
    version, release, warnings = detect_version(doc.meta, "squeue")
    if generation(version) != gen:
        return None
    info = Decoded(
        version=version, release=release, warnings=warnings, errors=_messages_of(doc.errors)
    )
    if info.errors and not doc.jobs:
        raise SlurmReportedError(f"squeue: {info.errors[0]}")
    with gc_paused():
        if version == 38:
            return _jobs38(doc.jobs or [], info), info
        return _jobs39(doc.jobs or [], info), info


def decode_squeue(data: bytes) -> tuple[list[Job], Decoded]:
    hint = _sniff(data)
    if hint is not None:
        done = _one_pass(data, hint)
        if done is not None:
            return done
    env, info = _open(data, "squeue")
    decoder = _squeue38 if info.version == 38 else _squeue39
    items = _payload(env.jobs, decoder, "squeue", info)
    with gc_paused():
        if info.version == 38:
            return _jobs38(items, info), info
        return _jobs39(items, info), info


# ---- sinfo -------------------------------------------------------------------------
_sinfo38 = msgspec.json.Decoder(list[js.SinfoNode38])
_sinfo39 = msgspec.json.Decoder(list[js.SinfoNode39])
_groups = msgspec.json.Decoder(list[js.SinfoGroup])


def node_state(state: str | list[str] | None, flags: list[str] | None = ()) -> str:  # type: ignore[assignment]
    parts = [s.upper() for s in (state if isinstance(state, list) else [state or ""]) if s]
    parts += [f.upper() for f in flags or () if f]
    every = set(parts)
    if every & {"DRAIN", "DRAINING", "DRAINED"}:
        return "drain"
    for base, out in (
        ("DOWN", "down"),
        ("ALLOCATED", "allocated"),
        ("MIXED", "mixed"),
        ("IDLE", "idle"),
        ("COMPLETING", "allocated"),
    ):
        if base in every:
            return out
    return "unknown"


def _gpus(gres: str, used: str) -> tuple[str | None, list[int]]:
    gtype = next((g.type for g in parse_gres(gres) if g.name == "gpu" and g.type), None)
    idx = sorted({i for g in parse_gres(used) if g.name == "gpu" for i in (g.indices or ())})
    return gtype, idx


def _gpu_counts(gres: str) -> Resources:
    out: Resources = {}
    for item in parse_gres(gres):
        if item.name == "gpu" and item.count:
            out["gpu"] = out.get("gpu", 0.0) + item.count
            if item.type:
                out[f"gpu:{item.type}"] = out.get(f"gpu:{item.type}", 0.0) + item.count
    return out


def features(value: str | list[str] | None) -> list[str]:
    """Node features: "h100,ib" (22.05) or a list (23.11+)."""
    if isinstance(value, list):
        return [str(f) for f in value if f]
    return [f for f in (value or "").split(",") if f and f != "(null)"]


def _node(
    name: str,
    state: str,
    partitions: list[str] | None,
    tres: str | None,
    used: str | None,
    gres: str | None,
    gres_used: str | None,
    reason: str | None,
    active_features: str | list[str] | None = None,
) -> Node:
    # Every text may be null: an idle 22.05 node has "tres_used": null.
    gres, gres_used = gres or "", gres_used or ""
    gtype, idx = _gpus(gres, gres_used)
    capacity, allocated = resources(tres or ""), resources(used or "")
    # Some clusters track no gres/gpu TRES; the GRES strings still count the GPUs.
    if "gpu" not in capacity:
        capacity.update(_gpu_counts(gres))
    if "gpu" not in allocated:
        allocated.update(_gpu_counts(gres_used))
    return Node(
        name=name,
        partitions=list(partitions or []),
        state=state,
        capacity=capacity,
        allocated=allocated,
        gpu_type=gtype,
        gpus_used_indices=idx,
        reason=reason or None,
        features=features(active_features),
    )


def _nodes(recs: list[Any], info: Decoded, flags: bool) -> list[Node]:
    out: list[Node] = []
    bad: list[str] = []
    for n in recs:
        try:
            out.append(
                _node(
                    n.name,
                    node_state(n.state, n.state_flags if flags else ()),
                    n.partitions,
                    n.tres,
                    n.tres_used,
                    n.gres,
                    n.gres_used,
                    n.reason,
                    n.active_features,
                )
            )
        except (ParseError, ValueError, TypeError) as exc:
            bad.append(f"node {n.name}: {exc}")
    skipped("sinfo", bad, info.warnings)
    return out


def decode_sinfo(data: bytes) -> tuple[list[Node], Decoded, bool]:
    """Nodes, and whether they are exact per node (22.05 node records) or were
    expanded from 23.02+ partition x node-group rows (then allocation is per group)."""
    env, info = _open(data, "sinfo")
    if env.nodes:
        if info.version == 38:
            nodes = _nodes(_payload(env.nodes, _sinfo38, "sinfo", info), info, True)
        else:
            nodes = _nodes(_payload(env.nodes, _sinfo39, "sinfo", info), info, False)
        return nodes, info, True
    by_name: dict[str, Node] = {}
    bad: list[str] = []
    for g in _payload(env.sinfo, _groups, "sinfo", info):
        names = (g.nodes.nodes if g.nodes else None) or []
        part = (g.partition.name if g.partition else "") or ""
        gres = g.gres if isinstance(g.gres, js.GroupGres) else js.GroupGres(total=g.gres or "")
        gres_total, gres_used = gres.total or "", gres.used or ""
        reason = g.reason.description if isinstance(g.reason, js.GroupReason) else g.reason
        reason = reason or ""
        active = features(g.features.active if g.features else None)
        state = node_state(g.node.state if g.node else None)
        try:
            cpus = num(g.cpus.total) if g.cpus else None
            mem = num(g.memory.maximum) if g.memory else None
            _not_negative(cpus=cpus, memory=mem)
        except ValueError as exc:  # one broken row: its nodes are left out, named
            bad.append(f"nodes {','.join(names[:3])}: {exc}")
            continue
        for name in names:
            node = by_name.get(name)
            if node is None:
                cap: Resources = {}
                if cpus is not None:
                    cap["cpu"] = cpus
                if mem is not None:
                    cap["memory"] = mem
                cap.update(_gpu_counts(gres_total))
                gtype, idx = _gpus(gres_total, gres_used if len(names) == 1 else "")
                node = by_name[name] = Node(
                    name=name,
                    state=state,
                    capacity=cap,
                    gpu_type=gtype,
                    gpus_used_indices=idx,
                    reason=reason or None,
                    features=active,
                )
            if part and part not in node.partitions:
                node.partitions.append(part)
    skipped("sinfo", bad, info.warnings)
    return list(by_name.values()), info, False


# ---- sacct -------------------------------------------------------------------------
_sacct = msgspec.json.Decoder(list[js.AcctJob])


def _acct_tres(items: list[js.AcctTres] | None) -> Resources:
    out: Resources = {}
    for t in items or ():
        count = num(t.count)
        if count is None or not t.type:
            continue
        key = {"mem": "memory"}.get(t.type, t.type) if t.type != "gres" else (t.name or "gres")
        if key not in NOT_RESOURCES:
            out[key] = count
    return out


def _acct_job(j: js.AcctJob, budget: HostBudget) -> Job:
    t = j.time or js.AcctTime()
    state = job_state(j.state.current if j.state else None)
    limit, priority = uint32("time_limit", t.limit), uint32("priority", j.priority)
    arr = j.array or js.AcctArray()
    array_job = num(arr.job_id)
    task = num(arr.task_id)
    tres = j.tres or js.AcctTresSet()
    wanted = tres.requested or tres.allocated
    node_count = next((t.count for t in wanted or () if t.type == "node"), None)
    node_count = uint32("node_count", node_count, MAX_NODES_REQUESTED)
    return Job(
        id=str(j.job_id),
        name=j.name or "",
        array_parent=str(int(array_job)) if array_job else None,
        array_task=str(int(task)) if array_job and task is not None else None,
        user=j.user or "",
        team=j.account or "",
        qos=j.qos or "",
        partition=j.partition or None,
        state=state,
        request=_acct_tres(wanted),
        nodes_requested=int(node_count or 1),
        time_limit=limit * 60 if limit is not None else None,
        submit_time=when("submit_time", t.submission) or 0.0,
        eligible_time=when("eligible_time", t.eligible),
        start_time=when("start_time", t.start),
        end_time=when("end_time", t.end),
        priority=priority,
        nodes=budget.expand(j.nodes) if j.nodes and j.nodes != "None assigned" else [],
        constraint=j.constraints or None,
    )


def decode_sacct(data: bytes) -> tuple[list[Job], Decoded]:
    """Every record, including earlier runs of a requeued job (``--duplicates``)."""
    env, info = _open(data, "sacct")
    out: list[Job] = []
    bad: list[str] = []
    budget = HostBudget("sacct")
    for j in _payload(env.jobs, _sacct, "sacct", info):
        try:
            out.append(_acct_job(j, budget))
        except (ParseError, ValueError, TypeError, OverflowError) as exc:
            bad.append(f"job {j.job_id}: {exc}")
    skipped("sacct", bad, info.warnings)
    return out, info


DECODERS: dict[str, Callable[[bytes], object]] = {
    "squeue": decode_squeue,
    "sinfo": decode_sinfo,
    "sacct": decode_sacct,
}
