"""Slurm's limits in the scopes it sets them on → ``Snapshot.limits`` (model.Limit).

Sources: ``sacctmgr show qos`` (a QoS's limits; the same QoS set as a partition's QoS
binds every job in that partition), ``sacctmgr show assoc`` (account and user
associations) and ``scontrol show partition`` (``QoS=``).

Ranks, lower wins among limits of the same kind (Slurm's resource_limits precedence):
partition QoS 0, job QoS 1 (a job QoS with the flag OverPartQOS wins over its partition's
QoS: the flag is on QoS.flags and the core swaps the two), the user's association 2, then
the account associations from the leaf up, 3, 4, 5 …, root last."""

from __future__ import annotations

from collections.abc import Iterable

from quotatop.collectors.model import Limit, Partition, Resources
from quotatop.collectors.slurm.sacctmgr import Assoc, QosRow

RANK_PARTITION_QOS = 0
RANK_QOS = 1
RANK_USER = 2
RANK_ACCOUNT_LEAF = 3


def _limit(
    scope: str,
    owner: str,
    per: str,
    rank: int,
    tres: Resources | None = None,
    jobs: int | None = None,
    submit: int | None = None,
    wall: float | None = None,
) -> Limit | None:
    if not tres and jobs is None and submit is None and wall is None:
        return None
    return Limit(
        scope=scope,
        owner=owner,
        per=per,
        tres=dict(tres or {}),
        jobs=jobs,
        submit=submit,
        wall=wall,
        rank=rank,
    )


def qos_limits(q: QosRow, scope: str = "qos", owner: str | None = None) -> list[Limit]:
    """A QoS's limits, one Limit per thing counted: GrpTRES/GrpJobs/GrpSubmitJobs (the
    QoS's jobs together), MaxTRESPU/MaxJobsPU/MaxSubmitPU (each user apart),
    MaxTRESPA/MaxJobsPA/MaxSubmitPA (each account apart), MaxTRES/MaxWall (each job)."""
    who = owner or q.name
    rank = RANK_QOS if scope == "qos" else RANK_PARTITION_QOS
    found = [
        _limit(scope, who, "group", rank, q.grp_tres, q.grp_jobs, q.grp_submit_jobs),
        _limit(
            scope,
            who,
            "user",
            rank,
            q.max_tres_per_user,
            q.max_jobs_per_user,
            q.max_submit_per_user,
        ),
        _limit(
            scope,
            who,
            "account",
            rank,
            q.max_tres_per_account,
            q.max_jobs_per_account,
            q.max_submit_per_account,
        ),
        _limit(scope, who, "job", rank, q.max_tres, wall=q.max_wall),
    ]
    return [x for x in found if x is not None]


def _depths(assocs: list[Assoc]) -> dict[str, int]:
    parents = {a.account: a.parent for a in assocs if a.user is None and a.partition is None}
    out: dict[str, int] = {}
    for account in parents:
        depth, seen, cur = 0, {account}, parents.get(account)
        while cur and cur not in seen:
            seen.add(cur)
            depth += 1
            cur = parents.get(cur)
        out[account] = depth
    return out


def assoc_limits(assocs: list[Assoc]) -> list[Limit]:
    """Account rows: GrpTRES/GrpJobs/GrpSubmitJobs count every job under the account
    (sub-accounts included); MaxJobs/MaxSubmitJobs are inherited by each user's
    association below, so they count each user apart; MaxTRES/MaxWall bind each job.
    User rows (owner ``account/user``): every count is that user's jobs in the account."""
    depths = _depths(assocs)
    deepest = max(depths.values(), default=0)
    out: list[Limit] = []
    for a in assocs:
        if a.user is not None:
            owner = f"{a.account}/{a.user}"
            if a.partition:
                owner += f"/{a.partition}"
            found = [
                _limit(
                    "user", owner, "group", RANK_USER, a.grp_tres, a.grp_jobs, a.grp_submit_jobs
                ),
                _limit("user", owner, "group", RANK_USER, None, a.max_jobs, a.max_submit_jobs),
                _limit("user", owner, "job", RANK_USER, a.max_tres, wall=a.max_wall),
            ]
        elif a.partition is None:
            # Leaf up: the deepest account 3, its parent 4, …; root (depth 0) last.
            rank = RANK_ACCOUNT_LEAF + deepest - depths.get(a.account, 0)
            found = [
                _limit(
                    "account", a.account, "group", rank, a.grp_tres, a.grp_jobs, a.grp_submit_jobs
                ),
                _limit("account", a.account, "user", rank, None, a.max_jobs, a.max_submit_jobs),
                _limit("account", a.account, "job", rank, a.max_tres, wall=a.max_wall),
            ]
        else:
            continue
        out.extend(x for x in found if x is not None)
    return _merge(out)


def _merge(limits: list[Limit]) -> list[Limit]:
    """A user association's GrpJobs and MaxJobs are both 'this user's running jobs':
    the two per-group Limits of one owner become one (the tighter number wins)."""
    merged: dict[tuple[str, str, str], Limit] = {}
    out: list[Limit] = []
    for lim in limits:
        key = (lim.scope, lim.owner, lim.per)
        prev = merged.get(key)
        if prev is None:
            merged[key] = lim
            out.append(lim)
            continue
        prev.tres = {**lim.tres, **prev.tres}
        prev.jobs = _least(prev.jobs, lim.jobs)
        prev.submit = _least(prev.submit, lim.submit)
        prev.wall = _least(prev.wall, lim.wall)
    return out


def _least(a, b):  # type: ignore[no-untyped-def]
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def partition_limits(partitions: Iterable[Partition], qos_rows: list[QosRow]) -> list[Limit]:
    """A partition's QoS binds every job in the partition (rank 0)."""
    by_name = {q.name: q for q in qos_rows}
    out: list[Limit] = []
    for p in partitions:
        q = by_name.get(p.qos or "")
        if q is not None:
            out.extend(qos_limits(q, scope="partition", owner=p.name))
    return out


def limits(
    qos_rows: list[QosRow], assocs: list[Assoc], partitions: Iterable[Partition]
) -> list[Limit]:
    out = partition_limits(partitions, qos_rows)
    for q in qos_rows:
        out.extend(qos_limits(q))
    out.extend(assoc_limits(assocs))
    return out
