"""``sacctmgr --noheader --parsable2 show assoc|qos|tres format=...``."""

from __future__ import annotations

from msgspec import Struct

from quotatop.collectors.model import Resources
from quotatop.collectors.slurm.durations import parse_duration
from quotatop.collectors.slurm.table import rows, to_float, to_int
from quotatop.collectors.slurm.tres import parse_tres

ASSOC_FORMAT = (
    "Cluster,Account,User,Partition,ParentName,ID,LFT,RGT,Fairshare,Priority,DefaultQOS,QOS,"
    "GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpJobsAccrue,GrpSubmitJobs,GrpWall,MaxTRES,"
    "MaxTRESPerNode,MaxTRESMins,MaxJobs,MaxJobsAccrue,MaxSubmitJobs,MaxWall"
)
QOS_FORMAT = (
    "ID,Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThreshold,"
    "UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpJobsAccrue,GrpSubmitJobs,"
    "GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,"
    "MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES"
)
TRES_FORMAT = "ID,Type,Name"


class Assoc(Struct):
    account: str
    user: str | None
    partition: str | None
    parent: str | None
    shares: float | None  # None: "parent" (the account uses its parent's shares)
    default_qos: str | None
    qos: list[str]
    grp_tres: Resources | None
    max_tres: Resources | None
    grp_jobs: int | None
    grp_submit_jobs: int | None
    max_jobs: int | None
    max_submit_jobs: int | None
    max_wall: float | None


class QosRow(Struct):
    name: str
    priority: int
    preempt: list[str]
    preempt_mode: str
    flags: list[str]
    usage_factor: float
    grp_tres: Resources | None
    grp_jobs: int | None
    max_tres: Resources | None  # per job
    max_wall: float | None
    max_tres_per_user: Resources | None
    max_jobs_per_user: int | None
    max_submit_per_user: int | None
    grace_time: float | None = None
    preempt_exempt_time: float | None = None  # None: not set, the cluster's applies
    grp_submit_jobs: int | None = None
    max_tres_per_account: Resources | None = None
    max_jobs_per_account: int | None = None
    max_submit_per_account: int | None = None


def _tres_or_none(text: str) -> Resources | None:
    return parse_tres(text) or None


def _list(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


def parse_assoc(text: str) -> list[Assoc]:
    out = []
    for r in rows(text, ASSOC_FORMAT.split(","), "sacctmgr assoc line"):
        share = r["Fairshare"].strip()
        out.append(
            Assoc(
                account=r["Account"],
                user=r["User"] or None,
                partition=r["Partition"] or None,
                parent=r["ParentName"] or None,
                shares=None if share == "parent" else to_float(share, "Fairshare"),
                default_qos=r["DefaultQOS"] or None,
                qos=_list(r["QOS"]),
                grp_tres=_tres_or_none(r["GrpTRES"]),
                max_tres=_tres_or_none(r["MaxTRES"]),
                grp_jobs=to_int(r["GrpJobs"], "GrpJobs"),
                grp_submit_jobs=to_int(r["GrpSubmitJobs"], "GrpSubmitJobs"),
                max_jobs=to_int(r["MaxJobs"], "MaxJobs"),
                max_submit_jobs=to_int(r["MaxSubmitJobs"], "MaxSubmitJobs"),
                max_wall=parse_duration(r["MaxWall"]),
            )
        )
    return out


def parse_qos(text: str) -> list[QosRow]:
    out = []
    for r in rows(text, QOS_FORMAT.split(","), "sacctmgr qos line"):
        out.append(
            QosRow(
                name=r["Name"],
                priority=to_int(r["Priority"], "QoS Priority") or 0,
                preempt=_list(r["Preempt"]),
                preempt_mode=(r["PreemptMode"] or "cluster").lower(),
                flags=_list(r["Flags"]),
                usage_factor=to_float(r["UsageFactor"], "UsageFactor") or 1.0,
                grp_tres=_tres_or_none(r["GrpTRES"]),
                grp_jobs=to_int(r["GrpJobs"], "GrpJobs"),
                max_tres=_tres_or_none(r["MaxTRES"]),
                max_wall=parse_duration(r["MaxWall"]),
                max_tres_per_user=_tres_or_none(r["MaxTRESPU"]),
                max_jobs_per_user=to_int(r["MaxJobsPU"], "MaxJobsPU"),
                max_submit_per_user=to_int(r["MaxSubmitPU"], "MaxSubmitPU"),
                grace_time=parse_duration(r["GraceTime"]),
                preempt_exempt_time=parse_duration(r["PreemptExemptTime"]),
                grp_submit_jobs=to_int(r["GrpSubmitJobs"], "GrpSubmitJobs"),
                max_tres_per_account=_tres_or_none(r["MaxTRESPA"]),
                max_jobs_per_account=to_int(r["MaxJobsPA"], "MaxJobsPA"),
                max_submit_per_account=to_int(r["MaxSubmitPA"], "MaxSubmitPA"),
            )
        )
    return out


def parse_tres_table(text: str) -> list[str]:
    """The TRES names the cluster tracks (``gres/gpu:h100``)."""
    names = []
    for r in rows(text, TRES_FORMAT.split(","), "sacctmgr tres line"):
        names.append(f"{r['Type']}/{r['Name']}" if r["Name"] else r["Type"])
    return names
