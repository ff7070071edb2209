"""Microsoft Philly ``cluster_job_log`` (msr-fiddle/philly-traces, ATC '19): a JSON list
of jobs ``{status, vc, jobid, attempts: [{start_time, end_time, detail: [{ip, gpus}]}],
submitted_time, user}``.

Read: id ``jobid``, team ``vc``, user, status, submit ``submitted_time``; the recorded
start is the first attempt's start; GPUs are the most any attempt held (its
``detail`` GPU lists summed); the run time is the sum of the attempts' own spans (the
time the job held GPUs; the gaps between attempts, back in the queue, are not run
time). Jobs with no attempt, no timed attempt, or whose last attempt has no end (still
running when the log was taken) are skipped and counted. Times are read as UTC (the
log gives no zone), so only their differences count.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from quotatop.collectors.gc_pause import gc_paused
from quotatop.simulation.traces.gpu_csv import MAX_WARNINGS, capacity_of
from quotatop.simulation.traces.model import (
    MAX_REQUEST,
    MAX_TIME,
    Trace,
    TraceError,
    TraceJob,
    in_range,
)

MISSING = ("GPU type", "QoS", "time limit")


def _when(value: Any, field: str) -> float | None:
    if value is None or value in ("", "None"):
        return None
    when = dt.datetime.fromisoformat(str(value))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return in_range(f"{field} time", when.timestamp(), -MAX_TIME, MAX_TIME)


def _job(raw: Any) -> TraceJob:
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    submit = _when(raw.get("submitted_time"), "submitted")
    if submit is None:
        raise ValueError("no submitted_time")
    attempts = raw.get("attempts") or []
    if not isinstance(attempts, list):  # found by tests/fuzz: a dict's [-1] is a KeyError
        raise ValueError(f"attempts is a {type(attempts).__name__}, not a list")
    if not attempts:
        raise ValueError("no scheduling attempt (never ran)")
    if attempts[-1].get("end_time") in (None, "", "None"):
        raise ValueError("last attempt has no end_time (still running when the log was taken)")
    run, first, gpus = 0.0, None, 0
    for a in attempts:
        s, e = _when(a.get("start_time"), "start"), _when(a.get("end_time"), "end")
        gpus = max(gpus, sum(len(d.get("gpus") or []) for d in a.get("detail") or []))
        if s is None or e is None:
            continue
        if e < s:
            raise ValueError("an attempt ends before it starts")
        first = s if first is None else min(first, s)
        run += e - s
    if first is None:
        raise ValueError("no attempt with both start_time and end_time")
    if gpus <= 0:
        raise ValueError("no GPUs in any attempt's detail")
    in_range("GPUs", gpus, 0, MAX_REQUEST)
    in_range("run time", run, 0, MAX_TIME)
    return TraceJob(id=str(raw.get("jobid", "")), team=str(raw.get("vc") or "unknown"),
                    user=str(raw.get("user") or ""), request={"gpu": float(gpus)},
                    submit_time=submit, duration=run, recorded_start=first,
                    status=str(raw.get("status") or "").lower())


def load_philly(path: str | Path, *, gpus: float | None = None, strict: bool = False) -> Trace:
    p = Path(path)
    try:
        with p.open("rb") as fh, gc_paused():
            data = json.load(fh)
    except OSError as e:
        raise TraceError(f"{p}: cannot read ({e.strerror})") from None
    except (ValueError, RecursionError) as e:
        raise TraceError(f"{p}: not JSON ({str(e)[:80]})") from None
    if not isinstance(data, list):
        raise TraceError(f"{p}: a Philly cluster_job_log is a JSON list of jobs")
    jobs: list[TraceJob] = []
    skipped, warnings = 0, []
    for i, raw in enumerate(data):
        try:
            jobs.append(_job(raw))
        except (ValueError, TypeError, AttributeError) as e:
            if strict:
                raise TraceError(f"{p}: job {i}: {e}") from None
            skipped += 1
            if len(warnings) < MAX_WARNINGS:
                warnings.append(f"job {i}: {e}")
    if not jobs:
        raise TraceError(f"{p}: no usable jobs" + (f" ({warnings[0]})" if warnings else ""))
    capacity, source = capacity_of(jobs, gpus)
    return Trace(path=str(p), format="philly", jobs=jobs, capacity={"gpu": capacity},
                 capacity_from=source, skipped=skipped, warnings=warnings,
                 layout="Philly cluster_job_log", missing=list(MISSING))
