"""GPU-cluster CSV traces (Philly/Helios-style): one job per row.

Accepted columns (case-insensitive; the first name found wins):

* job id: ``job_id``, ``jobid``, ``id``
* team: ``team``, ``vc``, ``virtual_cluster``, ``group``, ``user``
* GPUs: ``gpus``, ``gpu_num``, ``num_gpus``, ``gpu``
* submit: ``submit_time``, ``submitted_time``, ``submit``
* start: ``start_time``, ``start``
* end: ``end_time``, ``end``
* status: ``status``, ``state``
* run time when start/end are absent: ``duration``, ``run_time``

Times are epoch seconds or ISO date-times (``2017-10-03 10:18:58``, read as UTC
unless they carry an offset). Rows without submit time or GPUs, or without a
run time (start+end or duration), are skipped and counted.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from collectors.gc_pause import gc_paused
from collectors.traces.model import MAX_REQUEST, MAX_TIME, Trace, TraceError, TraceJob, in_range

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
REQUIRED = ("id", "team", "gpus", "submit")
MAX_WARNINGS = 5


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


def load_gpu_csv(path: str | Path, *, gpus: float | None = None,
                 strict: bool = False) -> Trace:
    p = Path(path)
    try:
        fh = p.open(newline="", errors="replace")
    except OSError as e:
        raise TraceError(f"{p}: cannot read ({e.strerror})") from None
    with fh, gc_paused():
        reader = csv.reader(fh)
        try:
            head = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            raise TraceError(f"{p}: empty file") from None
        col: dict[str, int] = {}
        for name, aliases in COLUMNS.items():
            for a in aliases:
                if a in head:
                    col[name] = head.index(a)
                    break
        missing = [n for n in REQUIRED if n not in col]
        if missing:
            raise TraceError(f"{p}: no column for {', '.join(missing)} (have: "
                             f"{', '.join(head)}; see docs/recording.md for accepted names)")
        jobs: list[TraceJob] = []
        skipped, warnings = 0, []
        for lineno, row in enumerate(reader, start=2):
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
    if gpus is not None:
        capacity, source = gpus, "--gpus"
    else:
        capacity, source = _peak(jobs), "peak recorded use (pass --gpus for the real size)"
    return Trace(path=str(p), format="csv", jobs=jobs, capacity={"gpu": capacity},
                 capacity_from=source, skipped=skipped, warnings=warnings)


def _row(row: list[str], col: dict[str, int], head: list[str]) -> TraceJob:
    def get(name: str) -> str:
        return row[col[name]].strip() if name in col and col[name] < len(row) else ""

    g = float(get("gpus"))
    if g < 0:
        raise ValueError(f"negative GPUs {g:g}")
    in_range(f"{head[col['gpus']]}", g, 0, MAX_REQUEST)
    submit = _time(get("submit"), "submit")
    if submit is None:
        raise ValueError("no submit time")
    start, end = _time(get("start"), "start"), _time(get("end"), "end")
    if start is not None and end is not None:
        duration = end - start
    elif get("duration"):
        duration = float(get("duration"))
    else:
        raise ValueError("no run time (start and end, or duration)")
    if duration < 0:
        raise ValueError("ends before it starts")
    in_range("run time", duration, 0, MAX_TIME)
    return TraceJob(id=get("id"), team=get("team") or "unknown", request={"gpu": g},
                    submit_time=submit,
                    duration=duration, recorded_start=start, status=get("status").lower())


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
