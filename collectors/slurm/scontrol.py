"""``scontrol --oneliner show partition|node|job|reservation`` and ``scontrol show config``."""

from __future__ import annotations

import datetime as dt
import re

from msgspec import Struct

from quotatop.collectors.model import Partition, Reservation, Resources
from quotatop.collectors.slurm.durations import parse_duration
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.gres import parse_gres
from quotatop.collectors.slurm.hostlist import expand_hostlist
from quotatop.collectors.slurm.table import to_int
from quotatop.collectors.slurm.timestamps import parse_timestamp
from quotatop.collectors.slurm.tres import parse_tres

# A key starts a token; values may contain spaces (OS=Linux 6.1 #1 SMP ...), so a value
# runs until the next "Key=" that follows whitespace.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_/:.]*)=", re.ASCII)


def parse_record(line: str) -> list[tuple[str, str]]:
    """``A=1 B=x y C=`` → [("A","1"), ("B","x y"), ("C","")], repeated keys kept."""
    marks = list(_KEY.finditer(line))
    if not marks or line[: marks[0].start()].strip():
        raise ParseError("scontrol record", line, "does not start with Key=")
    out = []
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        end = nxt.start() if nxt is not None else len(line)
        out.append((m.group(1), line[m.end() : end].strip()))
    return out


def _records(text: str, first_key: str) -> list[list[tuple[str, str]]]:
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("No "):
            continue
        rec = parse_record(line.strip())
        if rec[0][0] != first_key:
            raise ParseError("scontrol record", line, f"expected {first_key}=")
        out.append(rec)
    return out


def parse_partitions(text: str) -> list[Partition]:
    out = []
    for rec in _records(text, "PartitionName"):
        d = dict(rec)
        out.append(
            Partition(
                name=d["PartitionName"],
                nodes=expand_hostlist(d.get("Nodes", "")),
                state=d.get("State", "UP").lower(),
                max_time=parse_duration(d.get("MaxTime", "UNLIMITED")),
                priority_tier=to_int(d.get("PriorityTier", "0"), "PriorityTier") or 0,
                priority_job_factor=to_int(d.get("PriorityJobFactor", "0"), "PriorityJobFactor")
                or 0,
                default=d.get("Default", "NO") == "YES",
                # QoS=N/A: none; else the partition QoS whose limits bind every job in it.
                qos=d.get("QoS") if d.get("QoS") not in (None, "", "N/A", "(null)") else None,
            )
        )
    return out


def _names(text: str | None) -> list[str]:
    """``a,b`` → [a, b]; ``(null)`` or empty → []. A leading ``-`` (Users=-bob: everyone
    but bob) is kept: it is the source's own wording."""
    if text is None or text in ("", "(null)", "N/A"):
        return []
    return [x for x in text.split(",") if x]


def parse_reservations(text: str, tz: dt.tzinfo | None = None) -> list[Reservation]:
    """``scontrol --oneliner show reservation`` ("No reservations in the system" when
    none). Times are the controller's local time, as squeue's text; a reservation
    with no nodes (licenses or burst buffers only) closes no node and is kept so."""
    out = []
    for rec in _records(text, "ReservationName"):
        d = dict(rec)
        name = d["ReservationName"]
        start = parse_timestamp(d.get("StartTime", ""), tz)
        if start is None:
            raise ParseError("scontrol reservation", name, "has no StartTime")
        end = parse_timestamp(d.get("EndTime", ""), tz)
        nodes = d.get("Nodes", "")
        out.append(
            Reservation(
                name=name,
                nodes=expand_hostlist(nodes) if nodes not in ("", "(null)") else [],
                start=start,
                end=end,
                users=_names(d.get("Users")),
                accounts=_names(d.get("Accounts")),
                partition=d.get("PartitionName")
                if d.get("PartitionName") not in (None, "", "(null)")
                else None,
                flags=_names(d.get("Flags")),
                state=d.get("State", "").lower(),
            )
        )
    return out


def parse_config(text: str) -> dict[str, str]:
    """``Key = value`` lines; the header and blank lines are skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


class NodeRecord(Struct):
    name: str
    state: str
    partitions: list[str]
    capacity: Resources
    allocated: Resources
    gpu_type: str | None
    gpus_used_indices: list[int]
    reason: str | None


def parse_nodes(text: str) -> list[NodeRecord]:
    out = []
    for rec in _records(text, "NodeName"):
        d = dict(rec)
        gres = parse_gres(d.get("Gres", ""))
        used = parse_gres(d.get("GresUsed", ""))
        gpu_type = next((g.type for g in gres if g.name == "gpu" and g.type), None)
        indices = sorted({i for g in used if g.name == "gpu" for i in (g.indices or ())})
        reason = d.get("Reason")
        out.append(
            NodeRecord(
                name=d["NodeName"],
                state=d.get("State", "UNKNOWN"),
                partitions=[p for p in d.get("Partitions", "").split(",") if p],
                capacity=parse_tres(d.get("CfgTRES", "")),
                allocated=parse_tres(d.get("AllocTRES", "")),
                gpu_type=gpu_type,
                gpus_used_indices=indices,
                reason=reason.split(" [")[0] if reason else None,
            )
        )
    return out


def parse_jobs(text: str) -> list[dict[str, str]]:
    """One dict per job (first value of a repeated key); ``--details`` per-node GRES
    with indices are joined as ``NODES=GRES;...`` under ``_node_gres``."""
    out = []
    for rec in _records(text, "JobId"):
        d: dict[str, str] = {}
        node_gres = []
        last_nodes = None
        for k, v in rec:
            if k == "Nodes":
                last_nodes = v
            elif k == "GRES" and last_nodes is not None:
                node_gres.append(f"{last_nodes}={v}")
            d.setdefault(k, v)
        d["_node_gres"] = ";".join(node_gres)
        out.append(d)
    return out
