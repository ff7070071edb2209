"""``squeue --all --noheader -O 'JobID:|,...'``: the text fallback when --json is missing."""

from __future__ import annotations

from quotatop.collectors.slurm.errors import ParseError

FIELDS = [
    "JobID",
    "JobArrayID",
    "ArrayJobID",
    "ArrayTaskID",
    "UserName",
    "Account",
    "QOS",
    "Partition",
    "State",
    "Reason",
    "PriorityLong",
    "Nice",
    "SubmitTime",
    "EligibleTime",
    "AccrueTime",
    "StartTime",
    "EndTime",
    "TimeLimit",
    "TimeUsed",
    "NumNodes",
    "NumCPUs",
    "MinMemory",
    "tres-per-node",
    "tres-per-job",
    "tres-alloc",
    "NodeList",
    "SchedNodes",
    "Dependency",
    "RestartCnt",
    "PreemptTime",
    "Requeue",
    "Feature",  # the --constraint expression; "(null)" without one
    "OverSubscribe",  # "NO" = --exclusive
    "Reservation",  # the advanced reservation it asked for; "(null)" without one
    "Name",
]
FORMAT = ",".join(f"{f}:|" for f in FIELDS)
# The change detector's form (collectors/slurm/collector.py): every field but the one
# the clock moves. TimeUsed grows each second on every running job, so with it the
# text of an idle cluster changed on every call and the JSON ran every round.
MOVED_BY_THE_CLOCK = {"TimeUsed"}
SIGNATURE_FORMAT = ",".join(f"{f}:|" for f in FIELDS if f not in MOVED_BY_THE_CLOCK)


def parse_squeue_text(text: str) -> list[dict[str, str]]:
    """Name is last because a job name may contain '|': everything between the 31st bar
    and the line's closing bar is the name."""
    fixed = len(FIELDS) - 1
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", fixed)
        if len(parts) != fixed + 1 or not parts[-1].endswith("|"):
            raise ParseError("squeue line", line, f"line {n} is not {len(FIELDS)} '|' fields")
        parts[-1] = parts[-1][:-1]
        out.append({k: v.strip() for k, v in zip(FIELDS, parts, strict=True)})
    return out
