"""Parsed Slurm output → the snapshot model (teams, QoS, jobs with priority factors)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import msgspec

from quotatop.collectors.model import (
    PENDING,
    PREEMPTED,
    RUNNING,
    TERMINAL_STATES,
    QoS,
    Resources,
    ShareNode,
    Team,
)
from quotatop.collectors.model import Job as ModelJob
from quotatop.collectors.slurm.durations import parse_duration
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.hostlist import HostBudget
from quotatop.collectors.slurm.json_decode import job_state, resources, skipped
from quotatop.collectors.slurm.sacctmgr import Assoc, QosRow
from quotatop.collectors.slurm.sprio import SprioRow
from quotatop.collectors.slurm.sshare import ShareRow
from quotatop.collectors.slurm.table import to_float, to_int
from quotatop.collectors.slurm.timestamps import parse_timestamp

NO_GUARANTEE = "Slurm has no guarantee: GrpTRES is a cap (max) only"


def qos_levels(
    rows: Iterable[QosRow],
    cluster_preempt_mode: str = "requeue",
    cluster_exempt_time: float | None = None,
) -> list[QoS]:
    """QoS levels; PreemptMode ``cluster`` and an unset PreemptExemptTime take the
    cluster's own values (``scontrol show config``)."""
    out = []
    for r in rows:
        mode = r.preempt_mode
        if mode == "cluster":
            mode = cluster_preempt_mode.lower().split(",")[0] or "off"
        out.append(
            QoS(
                name=r.name,
                priority=r.priority,
                preempts=r.preempt,
                preempt_mode=mode,
                max_wall=r.max_wall,
                max_tres_per_user=r.max_tres_per_user,
                max_tres_per_job=r.max_tres,
                grp_tres=r.grp_tres,
                max_submit_jobs_per_user=r.max_submit_per_user,
                max_jobs_per_user=r.max_jobs_per_user,
                usage_factor=r.usage_factor,
                preempt_exempt_time=r.preempt_exempt_time
                if r.preempt_exempt_time is not None
                else cluster_exempt_time,
                grace_time=r.grace_time,
                flags=list(r.flags),
            )
        )
    return out


def _parents(assocs: list[Assoc]) -> dict[str, str | None]:
    return {a.account: a.parent for a in assocs if a.user is None and a.partition is None}


def teams(
    assocs: list[Assoc],
    shares: list[ShareRow],
    qos_rows: list[QosRow],
    jobs: list[ModelJob],
) -> list[Team]:
    """One team per account (root excluded: it is the whole cluster)."""
    parents = _parents(assocs)
    fs = {s.account: s.fairshare for s in shares if s.user is None}
    users: dict[str, list[Assoc]] = {}
    for a in assocs:
        if a.user is not None:
            users.setdefault(a.account, []).append(a)
    usage = team_usage(jobs, parents)
    out = []
    for a in assocs:
        if a.user is not None or a.partition is not None or a.account == "root":
            continue
        notes = [NO_GUARANTEE]
        per_user, note = _per_user_limit(users.get(a.account, []))
        if note:
            notes.append(note)
        parent = a.parent if a.parent and a.parent != "root" else None
        out.append(
            Team(
                name=a.account,
                parent=parent,
                guarantee=None,
                max=a.grp_tres,
                shares=a.shares,
                weight=a.shares if a.shares is not None else 1.0,
                fairshare=fs.get(a.account),
                usage=usage.get(a.account, {}),
                per_job_limit=a.max_tres,
                per_user_limit=per_user,
                max_wall=a.max_wall,
                max_submit_jobs=a.max_submit_jobs,
                source_notes=notes,
            )
        )
    return out


def _per_user_limit(user_assocs: list[Assoc]) -> tuple[Resources | None, str | None]:
    """The user associations' own GrpTRES, when they share one, caps each user in this
    account. A QoS's MaxTRESPerUser is not the account's: it is in Snapshot.limits
    with scope qos, and applies to every account alike."""
    own = {str(sorted(u.grp_tres.items())) for u in user_assocs if u.grp_tres}
    if len(own) == 1:
        first = next(u.grp_tres for u in user_assocs if u.grp_tres)
        return first, "per-user limit: the user associations' GrpTRES"
    return None, None


def share_tree(rows: list[ShareRow]) -> list[ShareNode]:
    """sshare's tree (printed depth-first, accounts indented one space per level) as
    the model's ShareNodes. The root row is left out: the core's tree starts under it.
    A user's "parent" shares (FairShare=parent) count as one share."""
    out: list[ShareNode] = []
    path: list[str] = []  # the account at each depth above the current row
    for r in rows:
        fs = r.fairshare
        if r.user is None:
            del path[r.depth:]
            parent = path[-1] if path else None
            path.append(r.account)
            if r.account == "root":
                continue
            parent = None if parent == "root" else parent
        else:
            parent = None
        out.append(ShareNode(
            account=r.account, user=r.user, parent=parent,
            raw_shares=fs.raw_shares if fs.raw_shares is not None else 1.0,
            raw_usage=fs.raw_usage or 0.0, factor=fs.factor))
    return out


def team_usage(jobs: Iterable[ModelJob], parents: dict[str, str | None]) -> dict[str, Resources]:
    """What each account holds now (running jobs), rolled up the account tree."""
    out: dict[str, Resources] = {}
    for j in jobs:
        if j.state != RUNNING:
            continue
        account: str | None = j.team
        seen = set()
        while account and account not in seen:
            seen.add(account)
            bucket = out.setdefault(account, {})
            for k, v in j.request.items():
                bucket[k] = bucket.get(k, 0.0) + v
            account = parents.get(account)
    return out


def attach_priority(jobs: list[ModelJob], rows: list[SprioRow]) -> list[ModelJob]:
    """Jobs with sprio's factors; sprio prints one row per job and partition, and the
    job's own partition wins. New Job objects: an earlier snapshot is never changed."""
    by_job: dict[str, list[SprioRow]] = {}
    for r in rows:
        by_job.setdefault(r.job_id, []).append(r)
    out = []
    for j in jobs:
        found = by_job.get(j.id)
        if not found:
            out.append(j)
            continue
        row = next((r for r in found if r.partition == j.partition), None)
        if row is None:
            row = max(found, key=lambda r: r.priority or 0.0)
        # squeue's own number is the job's priority; sprio's only when squeue has none.
        priority = j.priority if j.priority is not None else row.priority
        out.append(msgspec.structs.replace(j, factors=row.factors, priority=priority))
    return out


def merge_history(
    live: list[ModelJob], history: list[ModelJob], refused: Iterable[str] = ()
) -> list[ModelJob]:
    """Finished jobs from sacct that squeue no longer shows (one record per id: the
    latest run; earlier runs of a requeued job are counted in meta instead). A job whose
    squeue record was ``refused`` (named in a warning) is not one squeue no longer
    shows: its history would stand in for the refused record, unnamed."""
    have = {j.id for j in live}
    have.update(refused)
    latest: dict[str, ModelJob] = {}
    for j in history:
        if j.id in have or j.state not in TERMINAL_STATES:
            continue
        prev = latest.get(j.id)
        if prev is None or (j.end_time or 0) >= (prev.end_time or 0):
            latest[j.id] = j
    return live + list(latest.values())


def on_known_nodes(
    jobs: list[ModelJob], known: set[str], warnings: list[str]
) -> tuple[list[ModelJob], list[str]]:
    """The jobs whose nodes are all among the cluster's (sinfo's ``known``), and the
    ids of those refused, named in one warning: a job cannot run on a node the cluster
    does not have, so such a list is a broken answer (and a job's list is bounded by
    the cluster's own node count). No check while sinfo has answered nothing."""
    if not known:
        return jobs, []
    kept: list[ModelJob] = []
    bad: list[str] = []
    refused: list[str] = []
    for j in jobs:
        unknown = [n for n in j.nodes if n not in known] if j.nodes else ()
        if unknown:
            bad.append(f"job {j.id}: runs on {len(unknown)} node(s) sinfo does not list "
                       f"({', '.join(unknown[:2])}{', …' if len(unknown) > 2 else ''})")
            refused.append(j.id)
        else:
            kept.append(j)
    skipped("squeue", bad, warnings)
    return kept, refused


def preempted_runs(history: list[ModelJob]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for j in history:
        if j.state == PREEMPTED:
            counts[j.id] = counts.get(j.id, 0) + 1
    return counts


def job_from_text(
    r: dict[str, str], tz: dt.tzinfo | None = None, budget: HostBudget | None = None
) -> ModelJob:
    """A job from ``squeue -O`` text, for Slurm builds without --json; its node list
    counted against ``budget``, the answer's (one of its own when None)."""
    state = job_state(r["State"])
    array_task = r["ArrayTaskID"] if r["ArrayTaskID"] not in ("N/A", "") else None
    start = parse_timestamp(r["StartTime"], tz)
    nodes = r["NodeList"]
    nodes_requested = to_int(r["NumNodes"], "squeue NumNodes")
    if nodes_requested is None:
        raise ParseError("squeue NumNodes", r["NumNodes"])
    return ModelJob(
        id=r["JobID"],
        name=r["Name"],
        array_parent=r["ArrayJobID"] if array_task is not None else None,
        array_task=array_task,
        user=r["UserName"],
        team=r["Account"],
        qos=r["QOS"],
        partition=r["Partition"] or None,
        state=state,
        request=resources(r["tres-alloc"]),
        nodes_requested=nodes_requested,
        time_limit=parse_duration(r["TimeLimit"]),
        submit_time=parse_timestamp(r["SubmitTime"], tz) or 0.0,
        eligible_time=parse_timestamp(r["EligibleTime"], tz),
        start_time=start if state != PENDING else None,
        end_time=parse_timestamp(r["EndTime"], tz) if state != PENDING else None,
        priority=to_float(r["PriorityLong"], "squeue priority"),
        reason=r["Reason"] if r["Reason"] not in ("None", "") else None,
        estimated_start=start if state == PENDING else None,
        nodes=(budget or HostBudget("squeue")).expand(nodes) if state != PENDING else [],
        dependency=r["Dependency"] if r["Dependency"] not in ("(null)", "") else None,
        constraint=r["Feature"] if r["Feature"] not in ("(null)", "") else None,
        exclusive=r["OverSubscribe"] == "NO",  # NO = --exclusive; OK/YES/USER/MCS otherwise
        reservation=r["Reservation"] if r["Reservation"] not in ("(null)", "") else None,
    )
