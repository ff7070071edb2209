"""Standard Workload Format (Parallel Workloads Archive).

Header comment lines start with ';' (``; MaxProcs: 1024``). Each job line has 18
whitespace-separated fields, -1 for unknown: 1 job number, 2 submit time,
3 wait time, 4 run time, 5 allocated processors, 6 average CPU time, 7 used
memory, 8 requested processors, 9 requested time, 10 requested memory,
11 status, 12 user id, 13 group id, 14 executable, 15 queue, 16 partition,
17 preceding job, 18 think time. Times are seconds from the trace's start.

Only the fields the importer reads (2, 3, 4, 5, 8, 9 as numbers; 1, 11, 12, 13 as
text) are checked: converting all 18 of 100k lines cost more than the rest of
the import, and the others (CPU time, memory, queue, think time…) change nothing.
"""

from __future__ import annotations

from pathlib import Path

from quotatop.collectors.gc_pause import gc_paused
from quotatop.simulation.traces.model import (
    MAX_NODES,
    MAX_REQUEST,
    MAX_TIME,
    Trace,
    TraceError,
    TraceJob,
    in_range,
)

MAX_WARNINGS = 5
STATUS = {"0": "failed", "1": "completed", "5": "cancelled"}


def load_swf(path: str | Path, *, team_by: str = "group", resource: str = "cpu",
             strict: bool = False) -> Trace:
    """``team_by``: ``group`` (field 13; user id when the group is -1) or ``user``."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except OSError as e:
        raise TraceError(f"{p}: cannot read ({e.strerror})") from None
    header: dict[str, str] = {}
    lines: dict[str, int] = {}  # header key -> its line number
    jobs: list[TraceJob] = []
    skipped, warnings = 0, []
    unknown_runtime = 0  # ran on the real machine, run time not recorded
    # Fields the importer reads that are -1 on every job line: not in this trace.
    seen_wait = seen_req_procs = seen_req_time = seen_group = False
    by_group = team_by == "group"

    def bad(lineno: int, why: str) -> None:
        nonlocal skipped
        if strict:
            raise TraceError(f"{p}:{lineno}: {why}")
        skipped += 1
        if len(warnings) < MAX_WARNINGS:
            warnings.append(f"line {lineno}: {why}")

    with gc_paused():
        for lineno, line in enumerate(text.splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            if fields[0].startswith(";"):
                key, sep, value = line.strip()[1:].partition(":")
                if sep:
                    header[key.strip().lower()] = value.strip()
                    lines[key.strip().lower()] = lineno
                continue
            if len(fields) != 18:
                bad(lineno, f"{len(fields)} fields, SWF has 18")
                continue
            try:
                submit, wait, run = float(fields[1]), float(fields[2]), float(fields[3])
                alloc, req, req_time = float(fields[4]), float(fields[7]), float(fields[8])
            except ValueError:
                bad(lineno, "a field the importer reads is not a number")
                continue
            # The common line passes these comparisons (NaN fails them); only a line
            # that does not is checked field by field, for the message: the check of
            # each field on every line was a fifth of the import of 100k lines.
            if not ((0 <= submit <= MAX_TIME or submit == -1)
                    and (0 <= wait <= MAX_TIME or wait == -1)
                    and (0 <= run <= MAX_TIME or run == -1)
                    and (0 <= alloc <= MAX_REQUEST or alloc == -1)
                    and (0 <= req <= MAX_REQUEST or req == -1)
                    and (0 <= req_time <= MAX_TIME or req_time == -1)):
                bad(lineno, _out_of_range(submit, wait, run, alloc, req, req_time))
                continue
            procs = req if req > 0 else alloc
            if run < 0 and procs > 0 and submit >= 0:
                unknown_runtime += 1
            if run < 0 or procs <= 0 or submit < 0:
                bad(lineno, "unknown run time, processors or submit time (-1)")
                continue
            seen_wait = seen_wait or wait >= 0
            seen_req_procs = seen_req_procs or req > 0
            seen_req_time = seen_req_time or req_time > 0
            group = fields[12]
            has_group = group != "-1"
            seen_group = seen_group or has_group
            user = "u" + fields[11]
            jobs.append(TraceJob(
                id=fields[0], team="g" + group if by_group and has_group else user, user=user,
                request={resource: procs}, submit_time=submit,
                time_limit=req_time if req_time > 0 else None,
                duration=run, recorded_start=submit + wait if wait >= 0 else None,
                status=STATUS.get(fields[10], fields[10])))
    if not jobs:
        raise TraceError(f"{p}: no usable SWF job lines"
                         + (f" ({warnings[0]})" if warnings else ""))
    capacity, source = _capacity(header, jobs, resource, lines, p)
    known = {"wait": seen_wait, "req_procs": seen_req_procs, "req_time": seen_req_time,
             "group": seen_group}
    missing = [MISSING[k] for k, seen in known.items() if not seen]
    return Trace(path=str(p), format="swf", jobs=jobs, capacity={resource: capacity},
                 capacity_from=source, skipped=skipped, warnings=warnings,
                 layout="Standard Workload Format", missing=missing,
                 unknown_runtime=unknown_runtime)


def _out_of_range(submit: float, wait: float, run: float, alloc: float, req: float,
                  req_time: float) -> str:
    """The first field of a job line out of its range, named."""
    for name, value, hi in (
            ("submit time (field 2)", submit, MAX_TIME),
            ("wait time (field 3)", wait, MAX_TIME),
            ("run time (field 4)", run, MAX_TIME),
            ("allocated processors (field 5)", alloc, MAX_REQUEST),
            ("requested processors (field 8)", req, MAX_REQUEST),
            ("requested time (field 9)", req_time, MAX_TIME)):
        if value != -1:
            try:
                in_range(name, value, 0, hi)
            except ValueError as e:
                return str(e)
    raise AssertionError("no field out of range")  # the caller's check says otherwise


MISSING = {"wait": "wait time (field 3)", "req_procs": "requested processors (field 8)",
           "req_time": "requested time (field 9)", "group": "group id (field 13)"}


HEADER_LIMITS = {"maxprocs": ("MaxProcs", MAX_REQUEST), "maxnodes": ("MaxNodes", MAX_NODES)}


def header_number(header: dict[str, str], key: str, lines: dict[str, int],
                  p: Path) -> float | None:
    """A MaxProcs/MaxNodes header as a number in its range; None when absent or not a
    number (as before: such a header is ignored); TraceError naming the file, line
    and field when it is a number out of range (a 10^12-node cluster would be built)."""
    try:
        value = float(header[key].split()[0])
    except (KeyError, ValueError, IndexError):
        return None
    name, hi = HEADER_LIMITS[key]
    if value <= 0:  # SWF's -1, "unknown"
        return None
    try:
        return in_range(f"header {name}", value, 1, hi)
    except ValueError as e:
        raise TraceError(f"{p}:{lines.get(key, 0)}: {e}") from None


def _capacity(header: dict[str, str], jobs: list[TraceJob], resource: str,
              lines: dict[str, int], p: Path) -> tuple[float, str]:
    found = {key: header_number(header, key, lines, p) for key in ("maxprocs", "maxnodes")}
    for key, value in found.items():
        if value is not None:
            return value, f"header {key}"
    return max(j.request[resource] for j in jobs), "largest job (no MaxProcs header)"
