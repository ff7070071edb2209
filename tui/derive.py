"""What the views show, computed from one Snapshot. Pure functions, no Textual:
they run in the collector's worker thread so the UI thread only paints.

Borrowing follows Kueue's cohort model: a team using more than its guarantee
borrows the difference from teams of the same cohort (all teams when none is
set) that leave part of their guarantee unused, up to what they may lend.
A team whose source has no guarantee (Slurm: GrpTRES is a max only) neither
borrows nor lends; the views say so instead of showing zeros.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from quotatop.collectors.model import PENDING, RUNNING, Job, QoS, Snapshot

DOWN_STATES = frozenset({"down", "drain", "drained", "draining", "fail", "unknown",
                         "not_ready", "notready"})
QOS_CLASS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def unit_of(snap: Snapshot) -> str:
    return snap.meta.get("unit", "gpu")


@dataclass
class TeamRow:
    name: str
    guarantee: float | None
    max: float | None
    used: float = 0.0
    borrowed: float = 0.0
    borrowed_from: dict[str, float] = field(default_factory=dict)
    lent: float = 0.0
    lent_to: dict[str, float] = field(default_factory=dict)
    running: int = 0
    pending: int = 0
    queued: float = 0.0  # demand of the pending jobs, in the unit
    preemptible: bool = True
    notes: list[str] = field(default_factory=list)
    # Place in the account tree: a child's usage is also in its parent's (Slurm rolls
    # usage up), so rows are shown as a tree and only roots are added up.
    parent: str | None = None
    depth: int = 0
    kids: int = 0  # sub-accounts below it, at any depth (its rows roll them up)
    folded: bool = False  # shown folded: its sub-accounts' rows hidden (the Overview)

    @property
    def quota(self) -> float | None:
        """What utilization is measured against: the guarantee, else the max."""
        return self.guarantee if self.guarantee is not None else self.max

    @property
    def utilization(self) -> float | None:
        q = self.quota
        return self.used / q if q else None


@dataclass
class ClusterMeter:
    total: float | None
    used: float
    stranded: float  # free but unusable: node down/drained or its CPU/memory exhausted

    @property
    def free(self) -> float:
        return max(0.0, (self.total or 0.0) - self.used - self.stranded)


@dataclass
class Reclaim:
    job: Job
    amount: float
    lender: str


@dataclass
class Derived:
    unit: str
    teams: list[TeamRow]
    meter: ClusterMeter
    guarantee_sum: float
    capacity: float | None
    overcommit: bool


def _amount(res: dict[str, float] | None, unit: str) -> float | None:
    if res is None:
        return None
    return float(res.get(unit, 0.0))


def job_counts(jobs: list[Job], unit: str) -> dict[str, list[float]]:
    """Per team: [running jobs, pending jobs, running amount, pending amount]."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for j in jobs:
        st = j.state
        if st == RUNNING:
            c = out[j.team]
            c[0] += 1
            c[2] += j.request.get(unit, 0.0)
        elif st == PENDING:
            c = out[j.team]
            c[1] += 1
            c[3] += j.request.get(unit, 0.0)
    return out


def team_rows(snap: Snapshot) -> list[TeamRow]:
    unit = unit_of(snap)
    counts = job_counts(snap.jobs, unit)
    rows: list[TeamRow] = []
    lend_room: dict[str, float] = {}
    for t in snap.teams:
        c = counts.get(t.name, [0, 0, 0.0, 0.0])
        used = float(t.usage[unit]) if unit in t.usage else c[2]
        row = TeamRow(name=t.name, guarantee=_amount(t.guarantee, unit), max=_amount(t.max, unit),
                      used=used, running=int(c[0]), pending=int(c[1]), queued=c[3],
                      preemptible=t.preemptible, notes=list(t.source_notes))
        rows.append(row)
        if row.guarantee is not None:
            room = max(0.0, row.guarantee - used)
            lendable = _amount(t.lendable, unit)
            lend_room[t.name] = min(room, lendable) if lendable is not None else room
    cohort = {t.name: t.cohort or "" for t in snap.teams}
    by_name = {r.name: r for r in rows}
    for r in sorted(rows, key=lambda r: r.name):
        if r.guarantee is None or r.used <= r.guarantee:
            continue
        need = r.used - r.guarantee
        lenders = sorted((n for n in lend_room if n != r.name and cohort[n] == cohort[r.name]
                          and lend_room[n] > 0), key=lambda n: (-lend_room[n], n))
        for n in lenders:
            take = min(need, lend_room[n])
            lend_room[n] -= take
            need -= take
            r.borrowed_from[n] = r.borrowed_from.get(n, 0.0) + take
            lender = by_name[n]
            lender.lent += take
            lender.lent_to[r.name] = lender.lent_to.get(r.name, 0.0) + take
            if need <= 1e-9:
                break
        r.borrowed = sum(r.borrowed_from.values())
    parents = {t.name: t.parent for t in snap.teams}
    tree = _as_tree(rows, parents)
    _roll_up(tree, {t.name for t in snap.teams if unit in t.usage})
    return tree


def _roll_up(tree: list[TeamRow], reported: set[str]) -> None:
    """A parent row holds its whole subtree: its job counts and queued demand add its
    sub-accounts', and so does its usage unless the source reported it (Slurm rolls
    usage up the account tree itself; adding the children again would count twice).
    ``tree`` is in tree order, so reversed every row comes before its ancestors."""
    by_name = {r.name: r for r in tree}
    used_from_jobs = {r.name: r.used for r in tree if r.name not in reported}
    for r in reversed(tree):
        if r.parent is None:
            continue
        p = by_name[r.parent]
        p.running += r.running
        p.pending += r.pending
        p.queued += r.queued
        p.kids += 1 + r.kids
        if p.name in used_from_jobs:
            p.used += r.used


def visible_rows(tree: list[TeamRow], folded: set[str]) -> list[TeamRow]:
    """The rows of ``tree`` (in tree order) that show when the accounts in ``folded``
    are folded: a folded row stays, marked, and its subtree's rows go."""
    out: list[TeamRow] = []
    hidden_below: int | None = None  # depth of the folded row whose subtree is skipped
    for r in tree:
        if hidden_below is not None:
            if r.depth > hidden_below:
                continue
            hidden_below = None
        fold = r.kids > 0 and r.name in folded
        out.append(replace(r, folded=fold) if fold != r.folded else r)
        if fold:
            hidden_below = r.depth
    return out


def _as_tree(rows: list[TeamRow], parents: dict[str, str | None]) -> list[TeamRow]:
    """``rows`` in tree order: each team right after its parent, siblings in the order
    they came; ``depth`` set. A parent that is not a team makes a root; a cycle is
    broken where it is met (the snapshot may come from anywhere)."""
    names = {r.name for r in rows}
    kids: dict[str | None, list[TeamRow]] = {}
    for r in rows:
        p = parents.get(r.name)
        r.parent = p if p in names and p != r.name else None
        kids.setdefault(r.parent, []).append(r)
    out: list[TeamRow] = []
    placed: set[str] = set()

    def walk(r: TeamRow, depth: int) -> None:
        if r.name in placed:
            return
        placed.add(r.name)
        r.depth = depth
        out.append(r)
        for k in kids.get(r.name, []):
            walk(k, depth + 1)

    for r in kids.get(None, []):
        walk(r, 0)
    for r in rows:  # in a cycle: no root leads there
        if r.name not in placed:
            r.parent = None
            walk(r, 0)
    return out


def cluster_meter(snap: Snapshot, unit: str | None = None) -> ClusterMeter:
    unit = unit or unit_of(snap)
    if not snap.nodes:
        used = sum(float(t.usage.get(unit, 0.0)) for t in snap.teams)
        return ClusterMeter(total=None, used=used, stranded=0.0)
    total = used = stranded = 0.0
    for n in snap.nodes:
        cap = float(n.capacity.get(unit, 0.0))
        alloc = float(n.allocated.get(unit, 0.0))
        total += cap
        used += alloc
        free = max(0.0, cap - alloc)
        if free and node_is_stranding(n.state, n.capacity, n.allocated, unit):
            stranded += free
    return ClusterMeter(total=total, used=used, stranded=stranded)


def node_is_stranding(state: str, capacity: dict[str, float], allocated: dict[str, float],
                      unit: str) -> bool:
    """Free units on this node cannot be used: it is down, or what every job also
    needs (CPU, memory) is exhausted there."""
    if state.lower().rstrip("*~#") in DOWN_STATES:
        return True
    for other in ("cpu", "memory"):
        if other == unit or other not in capacity:
            continue
        if allocated.get(other, 0.0) >= capacity[other]:
            return True
    return False


def derive(snap: Snapshot) -> Derived:
    unit = unit_of(snap)
    rows = team_rows(snap)
    meter = cluster_meter(snap, unit)
    # Guarantees are promises; maxes are ceilings that borrowing is meant to
    # oversubscribe. Only a source with no guarantees at all is judged by its maxes.
    # Only the roots of the account tree: a child's quota lies within its parent's.
    roots = [r for r in rows if r.depth == 0]
    if any(r.guarantee is not None for r in rows):
        gsum = sum(r.guarantee or 0.0 for r in roots)
    else:
        gsum = sum(r.max or 0.0 for r in roots)
    return Derived(unit=unit, teams=rows, meter=meter, guarantee_sum=gsum, capacity=meter.total,
                   overcommit=meter.total is not None and gsum > meter.total + 1e-9)


def qos_priority(snap: Snapshot) -> dict[str, QoS]:
    return {q.name: q for q in snap.qos}


def pending_in_order(snap: Snapshot, limit: int | None = None) -> list[Job]:
    """Pending jobs the way a priority scheduler takes them: priority, then age."""
    pend = [j for j in snap.jobs if j.state == PENDING]
    pend.sort(key=lambda j: (-(j.priority if j.priority is not None else float("-inf")),
                             j.submit_time, j.id))
    return pend[:limit] if limit else pend


def _victim_order(snap: Snapshot) -> list[Job]:
    qmap = qos_priority(snap)
    running = [j for j in snap.jobs if j.state == RUNNING]
    # Lowest class first (BestEffort before Burstable before Guaranteed), then
    # lowest QoS priority, then the youngest (least work lost).
    running.sort(key=lambda j: (QOS_CLASS_RANK.get(j.qos_class or "", 1),
                                qmap[j.qos].priority if j.qos in qmap else 0,
                                -(j.start_time or 0.0), j.id))
    return running


def preemptor(snap: Snapshot) -> Job | None:
    """The pending job with the strongest claim to preempt: highest QoS that
    preempts something, then scheduler order."""
    qmap = qos_priority(snap)
    best: tuple[float, int] | None = None
    pick = None
    for i, j in enumerate(pending_in_order(snap)):
        q = qmap.get(j.qos)
        rank = QOS_CLASS_RANK.get(j.qos_class or "", -1)
        if (q is None or not q.preempts) and rank < 2:
            continue
        key = (q.priority if q else 0, -i)
        if best is None or key > best:
            best, pick = key, j
    return pick


def reclaim_order(snap: Snapshot, rows: list[TeamRow]) -> dict[str, list[Reclaim]]:
    """Per lender: the borrowers' running jobs that go first if it asks its
    guarantee back — Kueue reclaims borrowed capacity from the lowest priority,
    most recently started workloads."""
    unit = unit_of(snap)
    by_team: dict[str, list[Job]] = defaultdict(list)
    for j in _victim_order(snap):
        by_team[j.team].append(j)
    out: dict[str, list[Reclaim]] = {}
    for lender in rows:
        picks: list[Reclaim] = []
        for borrower, amount in sorted(lender.lent_to.items()):
            left = amount
            for j in by_team.get(borrower, []):
                if left <= 1e-9:
                    break
                got = j.request.get(unit, 0.0)
                if got <= 0:
                    continue
                picks.append(Reclaim(job=j, amount=got, lender=lender.name))
                left -= got
        if picks:
            out[lender.name] = picks
    return out
