"""The period's job runs from Slurm accounting: one bounded, read-only ``sacct`` query.

``-X`` keeps the allocation line of each job (not its steps), ``-D`` every run of a
requeued job (its PREEMPTED/REQUEUED runs are the preemptions it suffered), ``-a`` all
users. ``AllocTRES`` is what the job held (cpu, gres/gpu, gres/gpu:<type>), so
GPU-hours are AllocTRES × the run's time, as sacct itself would sum them. The argv
goes through the collector's runner and its allowlist (collectors/slurm/runner.py);
this module only builds it and parses the output.
"""

from __future__ import annotations

import datetime as dt

from quotatop.collectors.model import PREEMPTED
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.json_decode import job_state
from quotatop.collectors.slurm.timestamps import parse_timestamp
from quotatop.collectors.slurm.tres import parse_tres
from quotatop.review.report import JobRecord

FIELDS = ("JobIDRaw", "Account", "User", "Partition", "QOS", "State", "Submit", "Start",
          "End", "ElapsedRaw", "AllocTRES", "NodeList")
# Ends that mean "taken off its nodes to be run again later".
_PREEMPTED = frozenset({"PREEMPTED", "REQUEUED"})


def _local(epoch: float) -> str:
    """sacct reads --starttime/--endtime in the local time of the host it runs on."""
    return dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S")


def sacct_argv(since: float, until: float) -> list[str]:
    return ["sacct", "-X", "-P", "-n", "-D", "-a", f"--starttime={_local(since)}",
            f"--endtime={_local(until)}", f"--format={','.join(FIELDS)}"]


def parse_sacct(text: str) -> tuple[list[JobRecord], list[str]]:
    """(records, warnings): a line that does not parse is skipped and named once."""
    out: list[JobRecord] = []
    bad: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = line.split("|")
        if len(cols) != len(FIELDS):
            bad.append(f"{len(cols)} columns, expected {len(FIELDS)}: {line[:80]!r}")
            continue
        f = dict(zip(FIELDS, cols, strict=True))
        try:
            out.append(_record(f))
        except (ParseError, ValueError) as exc:
            bad.append(f"job {f['JobIDRaw']}: {exc}")
    warnings = []
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        warnings.append(f"sacct: skipped {len(bad)} line(s): {bad[0]}{more}")
    return out, warnings


def _record(f: dict[str, str]) -> JobRecord:
    raw_state = f["State"].split()[0] if f["State"].strip() else ""
    start = parse_timestamp(f["Start"])
    end = parse_timestamp(f["End"])
    state = job_state(raw_state)
    if raw_state.upper() in _PREEMPTED:
        state = PREEMPTED
    alloc = {k: v for k, v in parse_tres(f["AllocTRES"]).items()
             if k not in ("node", "billing", "energy")}
    if start is not None and end is None and raw_state.upper() not in ("RUNNING", "SUSPENDED",
                                                                        "COMPLETING"):
        # Ended with no end time written yet: its elapsed time says how long it ran.
        elapsed = float(f["ElapsedRaw"] or 0)
        end = start + elapsed
    nodes = [] if f["NodeList"] in ("", "None assigned", "(null)") else [f["NodeList"]]
    if not nodes and not alloc:
        start = None  # cancelled while pending: sacct writes Start = End, it never ran
    return JobRecord(
        job_id=f["JobIDRaw"], team=f["Account"], user=f["User"],
        partition=f["Partition"] or None, qos=f["QOS"] or None, state=state,
        submit=parse_timestamp(f["Submit"]) or start or 0.0, start=start,
        end=end, alloc=alloc, nodes=nodes, preempted=raw_state.upper() in _PREEMPTED)
