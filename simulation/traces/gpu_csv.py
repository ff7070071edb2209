"""GPU-cluster CSV traces: one job per row, read by the published layout its header
line names, or by an explicit column mapping.

Published layouts, recognised from the header line (every column listed present;
extra columns are fine; docs/recording.md "Traces" lists what each maps and lacks):

* Helios/Venus ``cluster_log.csv`` (SenseTime, SC '21): ``job_id, user, vc, gpu_num,
  cpu_num, node_num, state, submit_time, start_time, end_time`` (+ ``duration, queue``):
  the virtual cluster ``vc`` is the team; run time = end - start.
* Alibaba PAI 2020 ``pai_job_table`` (NSDI '22): ``job_name, inst_id, user, status,
  start_time, end_time``. The file has no header line; its ``pai_job_table.header``
  beside it is read. It has no GPU request (that is in ``pai_task_table``), so it is
  recognised and refused, saying so.
* Alibaba 2023 ``openb_pod_list_*`` (ATC '23): ``name, cpu_milli, memory_mib, num_gpu,
  gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``:
  GPUs = num_gpu x gpu_milli / 1000; submit = creation, start = scheduled, end = deletion.
* Alibaba 2026 spot-GPU ``job_info_df`` (ASPLOS '26): ``job_name, organization,
  gpu_model, cpu_request, gpu_request, worker_num, submit_time, duration, job_type``:
  organization is the team; gpu_request GPUs for each of worker_num workers; gpu_model
  the GPU type; job_type the QoS class (a ``Spot`` class is preemptible by the others).
  Its ``node_info_df`` (``node_name, gpu_model, gpu_capacity_num, cpu_num``) is read by
  ``load_nodes`` as the cluster.

Anything else: the generic names below (case-insensitive; the first found wins), or
``columns`` (``--columns id=job_name,team=organization,gpus=gpu_request``) naming the
column of each field; explicit names win over detected ones.

* id ``job_id|jobid|id``; team ``team|vc|virtual_cluster|group|user``; GPUs
  ``gpus|gpu_num|num_gpus|gpu``; submit ``submit_time|submitted_time|submit``; start
  ``start_time|start``; end ``end_time|end``; status ``status|state``; run time when
  start/end are absent ``duration|run_time``.
* ``--columns`` also takes ``user``, ``qos``, ``gpu_type``, ``workers`` (``gpus`` is
  then per worker) and ``gpu_milli`` (GPUs x milli / 1000).

Times are epoch seconds or ISO date-times (``2017-10-03 10:18:58``, read as UTC
unless they carry an offset). Rows without submit time or GPUs, or without a
run time (start+end or duration), are skipped and counted.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct

from quotatop.collectors.gc_pause import gc_paused
from quotatop.simulation.traces.model import (
    MAX_NODES,
    MAX_REQUEST,
    MAX_TIME,
    Trace,
    TraceError,
    TraceJob,
    TraceNode,
    in_range,
)

COLUMNS = {
    "id": ("job_id", "jobid", "id"),
    "team": ("team", "vc", "virtual_cluster", "group", "user"),
    "gpus": ("gpus", "gpu_num", "num_gpus", "gpu"),
    "submit": ("submit_time", "submitted_time", "submit"),
    "start": ("start_time", "start"),
    "end": ("end_time", "end"),
    "status": ("status", "state"),
    "duration": ("duration", "run_time"),
}
# Every field a column may give; --columns names them.
FIELDS = ("id", "team", "user", "gpus", "submit", "start", "end", "duration", "status",
          "qos", "gpu_type", "workers", "gpu_milli")
REQUIRED = ("id", "team", "gpus", "submit")
MAX_WARNINGS = 5
MAX_WORKERS = 100_000


class Layout(Struct, frozen=True):
    name: str
    header: tuple[str, ...]  # all present: this layout
    columns: dict[str, str]  # field -> column
    missing: tuple[str, ...]  # said in the output: "fields not in this trace"
    unused: tuple[str, ...] = ()  # in the trace, not simulated
    refuse: str = ""  # why it cannot be simulated alone ("" when it can)


LAYOUTS = (
    Layout(
        "Alibaba 2026 spot-GPU job_info_df",
        ("job_name", "organization", "gpu_model", "cpu_request", "gpu_request",
         "worker_num", "submit_time", "duration", "job_type"),
        {"id": "job_name", "team": "organization", "gpu_type": "gpu_model",
         "gpus": "gpu_request", "workers": "worker_num", "submit": "submit_time",
         "duration": "duration", "qos": "job_type"},
        ("start time (no recorded waits)", "user", "status", "time limit"),
        ("cpu_request",)),
    Layout(
        "Alibaba 2023 openb_pod_list",
        ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
         "pod_phase", "creation_time", "deletion_time", "scheduled_time"),
        {"id": "name", "gpus": "num_gpu", "gpu_milli": "gpu_milli", "qos": "qos",
         "status": "pod_phase", "submit": "creation_time", "start": "scheduled_time",
         "end": "deletion_time"},
        ("team (all jobs in one team, 'all')", "user", "time limit"),
        ("gpu_spec (GPU type alternatives)", "cpu_milli", "memory_mib")),
    Layout(
        "Helios/Venus cluster_log",
        ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
         "start_time", "end_time"),
        {"id": "job_id", "team": "vc", "user": "user", "gpus": "gpu_num",
         "submit": "submit_time", "start": "start_time", "end": "end_time",
         "status": "state"},
        ("GPU type", "QoS", "time limit"),
        ("cpu_num", "node_num")),
    Layout(
        "Alibaba PAI 2020 pai_job_table",
        ("job_name", "inst_id", "user", "status", "start_time", "end_time"),
        {"id": "job_name", "team": "user", "user": "user", "status": "status",
         "submit": "start_time", "end": "end_time"},
        ("GPU request (pai_task_table: plan_gpu / 100 x inst_num)",
         "start time (pai_task_table: earliest start_time of the job's tasks)",
         "team (user only)", "time limit"),
        refuse="it has no GPU request"),
)
NODE_HEADER = ("node_name", "gpu_model", "gpu_capacity_num")  # + cpu_num


def parse_columns(text: str) -> dict[str, str]:
    """``id=job_name,team=organization`` -> {"id": "job_name", ...}; ValueError naming
    the bad part."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        field, sep, column = part.partition("=")
        field, column = field.strip().lower(), column.strip().lower()
        if not sep or not column:
            raise ValueError(f"--columns: {part.strip()!r} is not FIELD=COLUMN")
        if field not in FIELDS:
            raise ValueError(f"--columns: unknown field {field!r} (fields: {', '.join(FIELDS)})")
        out[field] = column
    return out


def _time(text: str, field: str) -> float | None:
    s = text.strip()
    if not s or s.lower() in ("none", "nan", "null", "-1"):
        return None
    try:
        return in_range(f"{field} time", float(s), -MAX_TIME, MAX_TIME)
    except ValueError as e:
        if "out of range" in str(e):
            raise
    when = dt.datetime.fromisoformat(s)  # ValueError: caller reports the line
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


@contextlib.contextmanager
def _csv_errors(p: Path, reader: Any) -> Iterator[None]:
    """The csv module's own error (a field over its 128 KiB limit, a quote where it
    cannot be) as a TraceError naming the file and line. Found by tests/fuzz: it
    escaped as _csv.Error."""
    try:
        yield
    except csv.Error as e:
        raise TraceError(f"{p}:{reader.line_num}: not CSV ({e})") from None


def _detect(head: list[str]) -> Layout | None:
    have = set(head)
    for layout in LAYOUTS:
        if have.issuperset(layout.header):
            return layout
    return None


def _generic(head: list[str]) -> dict[str, str]:
    col: dict[str, str] = {}
    for name, aliases in COLUMNS.items():
        for a in aliases:
            if a in head:
                col[name] = a
                break
    return col


def _header(p: Path, reader: Iterator[list[str]]) -> tuple[list[str], Iterable[list[str]], int]:
    """(header, data rows, line number of the first data row). A file without a header
    line of its own (Alibaba PAI 2020) has it in ``<name>.header`` beside it."""
    try:
        first = next(reader)
    except StopIteration:
        raise TraceError(f"{p}: empty file") from None
    head = [h.strip().lower() for h in first]
    side = p.with_suffix(".header")
    if _detect(head) is None and not set(_generic(head)).issuperset(REQUIRED) and side.is_file():
        try:
            line = side.read_text(errors="replace").splitlines()[0]
        except (OSError, IndexError):
            return head, reader, 2
        return ([h.strip().lower() for h in next(csv.reader([line]))],
                itertools.chain([first], reader), 1)
    return head, reader, 2


def load_gpu_csv(path: str | Path, *, gpus: float | None = None, strict: bool = False,
                 columns: dict[str, str] | None = None) -> Trace:
    p = Path(path)
    try:
        fh = p.open(newline="", errors="replace")
    except OSError as e:
        raise TraceError(f"{p}: cannot read ({e.strerror})") from None
    reader = csv.reader(fh)
    with fh, gc_paused(), _csv_errors(p, reader):
        head, rows, first_line = _header(p, reader)
        layout = _detect(head)
        names = dict(layout.columns) if layout else _generic(head)
        if columns:
            names.update(columns)
            absent = [f"{f}={c}" for f, c in columns.items() if c not in head]
            if absent:
                raise TraceError(f"{p}: --columns names columns not in the header: "
                                 f"{', '.join(absent)} (have: {', '.join(head)})")
        if layout and layout.refuse and "gpus" not in (columns or {}):
            raise TraceError(f"{p}: {layout.name}: {layout.refuse}; fields not in this trace: "
                             f"{'; '.join(layout.missing)}")
        col = {f: head.index(c) for f, c in names.items() if c in head}
        required = [n for n in REQUIRED if n != "team" or layout is None]
        missing = [n for n in required if n not in col]
        if missing:
            raise TraceError(f"{p}: no column for {', '.join(missing)} (have: "
                             f"{', '.join(head)}; name them with --columns FIELD=COLUMN,..."
                             "; see docs/recording.md for the layouts read by their header)")
        jobs: list[TraceJob] = []
        skipped, warnings = 0, []
        for lineno, row in enumerate(rows, start=first_line):
            if not any(c.strip() for c in row):
                continue
            try:
                job = _row(row, col, head)
            except (ValueError, IndexError) as e:
                if strict:
                    raise TraceError(f"{p}:{lineno}: {e}") from None
                skipped += 1
                if len(warnings) < MAX_WARNINGS:
                    warnings.append(f"line {lineno}: {e}")
                continue
            jobs.append(job)
    if not jobs:
        raise TraceError(f"{p}: no usable rows" + (f" ({warnings[0]})" if warnings else ""))
    capacity, source = capacity_of(jobs, gpus)
    if layout:
        missing_fields = list(layout.missing)
        unused = list(layout.unused)
    else:
        missing_fields = [m for f, m in GENERIC_MISSING.items() if f not in col]
        unused = []
        if "start" not in col:
            missing_fields.insert(0, "start time (no recorded waits)")
    return Trace(path=str(p), format="csv", jobs=jobs, capacity={"gpu": capacity},
                 capacity_from=source, skipped=skipped, warnings=warnings,
                 layout=layout.name if layout else "generic columns", missing=missing_fields,
                 qos=qos_classes({j.qos for j in jobs if j.qos}), unused=unused)


GENERIC_MISSING = {"user": "user", "qos": "QoS", "gpu_type": "GPU type",
                   "status": "status"}


def qos_classes(names: set[str]) -> dict[str, list[str]]:
    """A class named like ``spot`` is preemptible by every class that is not; with no
    spot class no class preempts another (the trace says nothing of it)."""
    spot = sorted(n for n in names if "spot" in n.lower())
    return {n: ([] if n in spot else spot) for n in sorted(names)}


def _row(row: list[str], col: dict[str, int], head: list[str]) -> TraceJob:
    def get(name: str) -> str:
        return row[col[name]].strip() if name in col and col[name] < len(row) else ""

    g = float(get("gpus"))
    if g < 0:
        raise ValueError(f"negative GPUs {g:g}")
    in_range(f"{head[col['gpus']]}", g, 0, MAX_REQUEST)
    workers = 1
    if get("workers"):
        w = in_range(head[col["workers"]], float(get("workers")), 1, MAX_WORKERS)
        if w != int(w):
            raise ValueError(f"{head[col['workers']]} {w:g} is not a whole number")
        workers = int(w)
        g = in_range("GPUs of all workers", g * workers, 0, MAX_REQUEST)
    if get("gpu_milli"):
        milli = in_range(head[col["gpu_milli"]], float(get("gpu_milli")), 0, 1000)
        g = g * milli / 1000.0
    submit = _time(get("submit"), "submit")
    if submit is None:
        raise ValueError("no submit time")
    start, end = _time(get("start"), "start"), _time(get("end"), "end")
    if start is not None and end is not None:
        duration = end - start
    elif get("duration"):
        duration = float(get("duration"))
    elif start is None and "start" in col:
        raise ValueError("never started (no start time)")
    else:
        raise ValueError("no run time (start and end, or duration)")
    if duration < 0:
        raise ValueError("ends before it starts")
    in_range("run time", duration, 0, MAX_TIME)
    user = get("user")
    return TraceJob(id=get("id"), team=get("team") or ("unknown" if "team" in col else "all"),
                    user=user, request={"gpu": g}, submit_time=submit,
                    duration=duration, recorded_start=start, status=get("status").lower(),
                    qos=get("qos"), gpu_type=get("gpu_type"), workers=workers)


def capacity_of(jobs: list[TraceJob], gpus: float | None) -> tuple[float, str]:
    """The cluster's GPUs and where the number came from, said out loud."""
    if gpus is not None:
        return gpus, "--gpus"
    if any(j.recorded_start is not None for j in jobs):
        return _peak(jobs), "peak recorded use (pass --gpus for the real size)"
    return (max(j.request["gpu"] for j in jobs),
            "largest job: no recorded starts (pass --gpus or --nodes-file for the real size)")


def _peak(jobs: list[TraceJob]) -> float:
    events = []
    for j in jobs:
        if j.recorded_start is not None:
            events.append((j.recorded_start, j.request["gpu"]))
            events.append((j.recorded_start + j.duration, -j.request["gpu"]))
    peak = cur = 0.0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        cur += d
        peak = max(peak, cur)
    return peak or max(j.request["gpu"] for j in jobs)


def load_nodes(path: str | Path) -> list[TraceNode]:
    """A trace's node list (Alibaba 2026 ``node_info_df``: ``node_name, gpu_model,
    gpu_capacity_num, cpu_num``): each node with its GPU count and model."""
    p = Path(path)
    try:
        fh = p.open(newline="", errors="replace")
    except OSError as e:
        raise TraceError(f"{p}: cannot read ({e.strerror})") from None
    nodes: list[TraceNode] = []
    reader = csv.reader(fh)
    with fh, _csv_errors(p, reader):
        try:
            head = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            raise TraceError(f"{p}: empty file") from None
        absent = [c for c in NODE_HEADER if c not in head]
        if absent:
            raise TraceError(f"{p}: no column for {', '.join(absent)} (a node file has "
                             f"{', '.join(NODE_HEADER)}, cpu_num; have: {', '.join(head)})")
        i = {c: head.index(c) for c in (*NODE_HEADER, "cpu_num") if c in head}
        for lineno, row in enumerate(reader, start=2):
            if not any(c.strip() for c in row):
                continue
            try:
                gpus = in_range("gpu_capacity_num", float(row[i["gpu_capacity_num"]]), 0,
                                MAX_REQUEST)
                cpus = (in_range("cpu_num", float(row[i["cpu_num"]]), 0, MAX_REQUEST)
                        if "cpu_num" in i and row[i["cpu_num"]].strip() else 0.0)
                nodes.append(TraceNode(name=row[i["node_name"]].strip(), gpus=gpus,
                                       gpu_type=row[i["gpu_model"]].strip(), cpus=cpus))
            except (ValueError, IndexError) as e:
                raise TraceError(f"{p}:{lineno}: {e}") from None
            if len(nodes) > MAX_NODES:
                raise TraceError(f"{p}: more than {MAX_NODES} nodes")
    if not nodes:
        raise TraceError(f"{p}: no nodes")
    return nodes
