"""``sprio --noheader -o '%i|%r|%u|%Y|...'``: priority and its weighted factors per job."""

from __future__ import annotations

from msgspec import Struct

from quotatop.collectors.model import PriorityFactors
from quotatop.collectors.slurm.table import rows, to_float

FORMAT = "%i|%r|%u|%Y|%y|%A|%a|%B|%b|%F|%f|%J|%j|%P|%p|%Q|%q|%S|%N|%T|%t"
COLUMNS = [
    "job_id",
    "partition",
    "user",
    "priority",
    "priority_norm",
    "age",
    "age_norm",
    "assoc",
    "assoc_norm",
    "fairshare",
    "fairshare_norm",
    "job_size",
    "job_size_norm",
    "partition_w",
    "partition_norm",
    "qos",
    "qos_norm",
    "site",
    "nice",
    "tres",
    "tres_norm",
]


class SprioRow(Struct):
    job_id: str
    partition: str
    user: str
    priority: float | None
    factors: PriorityFactors


def _f(row: dict[str, str], key: str) -> float:
    return to_float(row[key], f"sprio {key}") or 0.0


def _tres(text: str) -> float:
    # %T is "cpu=12,gres/gpu=30" weighted per TRES; the contribution is the sum.
    total = 0.0
    for item in text.split(","):
        _, sep, value = item.partition("=")
        if sep:
            total += to_float(value, "sprio TRES") or 0.0
    return total


def parse_sprio(text: str) -> list[SprioRow]:
    out = []
    for r in rows(text, COLUMNS, "sprio line"):
        factors = PriorityFactors(
            age=_f(r, "age"),
            assoc=_f(r, "assoc"),
            fairshare=_f(r, "fairshare"),
            job_size=_f(r, "job_size"),
            partition=_f(r, "partition_w"),
            qos=_f(r, "qos"),
            # sprio prints the nice value; its contribution lowers the priority.
            nice=-_f(r, "nice"),
            tres=_tres(r["tres"]) if r["tres"] not in ("", "(null)") else 0.0,
        )
        out.append(
            SprioRow(
                job_id=r["job_id"].strip(),
                partition=r["partition"],
                user=r["user"],
                priority=to_float(r["priority"], "sprio priority"),
                factors=factors,
            )
        )
    return out


def parse_sprio_weights(text: str) -> dict[str, float]:
    """``sprio --weights``: the configured weight of each factor."""
    found = rows(text, COLUMNS, "sprio --weights line")
    if not found:
        return {}
    r = found[0]
    return {
        k: v
        for k in ("age", "assoc", "fairshare", "job_size", "partition_w", "qos", "site")
        if (v := to_float(r[k], f"sprio weight {k}")) is not None
    }
