"""The usage report of a period, per team, as an account tree with roll-ups.

Pure functions over finished-job records (one per run of a job, as ``sacct -D`` lists
them), the snapshot's teams and a price table: no I/O, so every number can be derived
by hand in a test. Field by field: docs/review.md.

Counting rules (each chosen so that a number means one thing):

* usage is the part of each run inside ``[since, until)``: a run that crosses a boundary
  counts only its inside part; a run still going counts up to ``until``;
* a job belongs to one team; a parent's row is its own jobs plus each child's subtree,
  each team's jobs added once (the tree is a forest: a cycle in the parent fields is
  cut where it closes, so no job can reach a root by two paths);
* waits are per job (not per run): every span it spent pending — submit → first start,
  each requeue (preemption) → the next start, the last requeue → ``until`` for a job
  still pending (``wait_spans``); a span ending with a start in the period counts whole,
  a job still pending at ``until`` counts its wait so far, in the percentiles too;
* the idle guarantee is ``guarantee-hours − ∫ min(usage, guarantee) dt``: the
  guaranteed capacity the team left unused; use above the guarantee (borrowing)
  does not fill another hour's idleness.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import Struct

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Resources, Team

REPORT_VERSION = 1
LONGEST = 10  # how many of the longest waits each row lists
UNTYPED = ""  # the GPU type of a GPU count no source typed


class JobRecord(Struct, kw_only=True):
    """One run of a job (a requeued job has one record per run, as ``sacct -D``)."""

    job_id: str
    team: str
    user: str = ""
    partition: str | None = None
    qos: str | None = None
    state: str = ""  # the model's state names (collectors/model.py)
    submit: float
    start: float | None = None  # None: never started
    end: float | None = None  # None: not ended by the end of the data
    alloc: Resources = {}  # total over the run's nodes: cpu, gpu, gpu:<type>, …
    nodes: list[str] = []
    preempted: bool = False  # this run ended because it was preempted (requeued)


class Prices(Struct, kw_only=True, forbid_unknown_fields=True):
    """Cost per hour of use. A GPU type not in ``gpu`` costs ``gpu_hour``; with no
    ``gpu_hour`` its hours are reported as unpriced rather than costed at zero."""

    currency: str = ""
    cpu_hour: float = 0.0
    gpu_hour: float | None = None
    gpu: dict[str, float] = {}


class WaitRow(Struct, kw_only=True):
    job_id: str
    team: str
    user: str
    submit: float
    start: float | None  # None: still pending at the end of the period
    wait: float  # seconds; for a pending job, the wait so far
    started: bool


class TeamRow(Struct, kw_only=True):
    team: str
    parent: str | None
    depth: int  # 0 for a root of the tree
    children: list[str]
    jobs: int
    gpu_hours: float
    gpu_hours_by_type: dict[str, float]  # "" = GPUs no source typed
    cpu_hours: float
    guarantee_gpu: float | None  # GPUs; None: no guarantee in the subtree
    guarantee_cpu: float | None
    guarantee_gpu_hours: float | None
    guarantee_cpu_hours: float | None
    used_gpu_hours_within_guarantee: float | None
    used_cpu_hours_within_guarantee: float | None
    idle_guarantee_gpu_hours: float | None
    idle_guarantee_cpu_hours: float | None
    cost: float
    unpriced_gpu_hours: float  # GPU-hours of types with no price
    preemptions: int
    wait_p50: float | None  # seconds
    wait_p90: float | None
    longest_waits: list[WaitRow]


class IncidentRow(Struct, kw_only=True):
    kind: str
    opened_at: float
    closed_at: float | None
    severity: str
    teams: list[str]
    summary: str


class Report(Struct, kw_only=True):
    version: int
    source: str
    cluster: str
    since: float
    until: float
    hours: float
    currency: str
    teams: list[TeamRow]  # the tree in depth-first order, children by name
    total: TeamRow  # every team together ("(all)")
    incidents: list[IncidentRow] | None  # None: the source cannot say (see incidents_note)
    incidents_note: str | None
    notes: list[str]


# ---- prices -------------------------------------------------------------------------

def parse_prices(raw: Any, where: str) -> Prices:
    """A ``[prices]`` table (from the config or a --prices file) checked: each price a
    finite number ≥ 0. A bad one is a UserError naming the key (one line, exit 2)."""
    if not isinstance(raw, Mapping):
        raise UserError(f"{where}: at prices: expected a table, got {type(raw).__name__}")
    known = set(Prices.__struct_fields__)
    for key in raw:
        if key not in known:
            raise UserError(f"{where}: at prices.{key}: unknown key "
                            f"(known: {', '.join(sorted(known))})")
    cur = raw.get("currency", "")
    if not isinstance(cur, str):
        raise UserError(f"{where}: at prices.currency: expected a string, got {cur!r}")
    gpu = raw.get("gpu", {})
    if not isinstance(gpu, Mapping):
        raise UserError(f"{where}: at prices.gpu: expected a table of GPU type = price "
                        f"per GPU-hour, got {gpu!r}")
    for key in ("cpu_hour", "gpu_hour"):
        if key in raw:
            _price(raw[key], f"prices.{key}", where)
    for name, value in gpu.items():
        _price(value, f"prices.gpu.{name}", where)
    return Prices(currency=cur, cpu_hour=float(raw.get("cpu_hour", 0.0)),
                  gpu_hour=None if raw.get("gpu_hour") is None else float(raw["gpu_hour"]),
                  gpu={str(k): float(v) for k, v in gpu.items()})


def _price(value: Any, key: str, where: str) -> None:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value < 0):
        raise UserError(f"{where}: at {key}: expected a price per hour, a number ≥ 0, "
                        f"got {value!r}")


# ---- the computation ----------------------------------------------------------------

def gpu_counts(alloc: Mapping[str, float]) -> dict[str, float]:
    """GPUs by type. ``gpu`` is the total where a source gives it; the part of it no
    ``gpu:<type>`` key covers is the untyped ``""``."""
    typed = {k[4:]: v for k, v in alloc.items() if k.startswith("gpu:") and v > 0}
    total = alloc.get("gpu", sum(typed.values()))
    rest = total - sum(typed.values())
    if rest > 1e-9:
        typed[UNTYPED] = rest
    return typed


def overlap(start: float | None, end: float | None, since: float, until: float) -> float:
    """Seconds of ``[start, end)`` inside ``[since, until)``; an open end runs to until."""
    if start is None:
        return 0.0
    stop = until if end is None else min(end, until)
    return max(0.0, stop - max(start, since))


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default): p50 of 10, 20, 30
    is 20 and p90 is 28."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _within(records: Sequence[JobRecord], key: str, cap: float, since: float,
            until: float) -> float:
    """∫ min(use(t), cap) dt over the period, in hours, ``use`` being the sum of
    ``key`` (gpu or cpu) over the running records: a sweep of start/end events."""
    events: list[tuple[float, float]] = []
    for r in records:
        amount = sum(gpu_counts(r.alloc).values()) if key == "gpu" else r.alloc.get(key, 0.0)
        if amount <= 0 or overlap(r.start, r.end, since, until) <= 0:
            continue
        assert r.start is not None
        events.append((max(r.start, since), amount))
        events.append((until if r.end is None else min(r.end, until), -amount))
    events.sort()
    total, use, last = 0.0, 0.0, since
    for t, delta in events:
        total += min(use, cap) * (t - last)
        use, last = use + delta, t
    return total / 3600.0


def _guarantee(team: Team | None, key: str) -> float | None:
    g = team.guarantee if team is not None else None
    if g is None:
        return None
    if key == "gpu":
        return g.get("gpu", sum(v for k, v in g.items() if k.startswith("gpu:")))
    return g.get(key)


class _Own(Struct, kw_only=True):
    """What one team holds by itself, before the roll-up."""

    jobs: set[str]
    gpu_by_type: dict[str, float]
    cpu_hours: float
    cost: float
    unpriced: float
    preemptions: int
    guarantee: dict[str, float | None]
    g_hours: dict[str, float | None]
    within: dict[str, float | None]


def _own(team: Team | None, records: Sequence[JobRecord], since: float, until: float,
         prices: Prices) -> _Own:
    hours = (until - since) / 3600.0
    jobs: set[str] = set()
    by_type: dict[str, float] = {}
    cpu_hours = cost = unpriced = 0.0
    preemptions = 0
    for r in records:
        inside = overlap(r.start, r.end, since, until)
        if inside > 0 or since <= r.submit < until:
            jobs.add(r.job_id)
        if r.preempted and r.end is not None and since <= r.end < until:
            preemptions += 1
        if inside <= 0:
            continue
        h = inside / 3600.0
        for kind, n in gpu_counts(r.alloc).items():
            by_type[kind] = by_type.get(kind, 0.0) + n * h
            price = prices.gpu.get(kind, prices.gpu_hour) if kind else prices.gpu_hour
            if price is None:
                unpriced += n * h
            else:
                cost += n * h * price
        cpu = r.alloc.get("cpu", 0.0) * h
        cpu_hours += cpu
        cost += cpu * prices.cpu_hour
    guarantee = {k: _guarantee(team, k) for k in ("gpu", "cpu")}
    g_hours = {k: None if g is None else g * hours for k, g in guarantee.items()}
    within = {k: None if g is None else _within(records, k, g, since, until)
              for k, g in guarantee.items()}
    return _Own(jobs=jobs, gpu_by_type=by_type, cpu_hours=cpu_hours, cost=cost,
                unpriced=unpriced, preemptions=preemptions, guarantee=guarantee,
                g_hours=g_hours, within=within)


def _add(a: float | None, b: float | None) -> float | None:
    """Sum where either side has a value: a subtree's guarantee is its teams' together."""
    if a is None:
        return b
    return a if b is None else a + b


def team_tree(teams: Iterable[Team], job_teams: Iterable[str]) -> dict[str, str | None]:
    """team -> parent, for every team of the snapshot, every team a job names and every
    parent a team names; a parent field that would close a cycle is dropped there."""
    parent: dict[str, str | None] = {}
    for t in teams:
        parent[t.name] = t.parent if t.parent and t.parent != t.name else None
    for p in list(parent.values()):
        if p is not None and p not in parent:
            parent[p] = None
    for name in job_teams:
        parent.setdefault(name, None)
    for name in sorted(parent):
        seen = {name}
        node = parent[name]
        while node is not None:
            if node in seen:  # name's chain closes on itself: cut name's own link
                parent[name] = None
                break
            seen.add(node)
            node = parent.get(node)
    return parent


def wait_spans(runs: Sequence[JobRecord]) -> list[tuple[float, float | None]]:
    """The spans ``(from, to)`` one job spent pending and eligible, from its records (one
    per run, and one with no start and no end for a job still pending at the end of the
    data): submit → first start, each requeue → the next start, and the last requeue (or
    the submit, for a job that never started) → ``None`` (still pending). A run that
    another run follows was requeued (preempted), so the job waited from its end again.
    The one definition of a wait (docs/review.md, Waits): the report and the Report
    screen (m) both read it here."""
    started = sorted((r for r in runs if r.start is not None), key=lambda r: r.start or 0.0)
    pending = [r for r in runs if r.start is None and r.end is None]
    spans: list[tuple[float, float | None]] = []
    ready: float | None = min(r.submit for r in runs)  # pending since; None: running
    for r in started:
        assert r.start is not None
        if ready is not None:
            # A requeued run's own submit where the source resets it (Slurm does).
            ready = max(ready, r.submit)
            if r.start > ready:
                spans.append((ready, r.start))
        ready = r.end
    if pending:
        since_ = pending[0].submit if ready is None else max(pending[0].submit, ready)
        spans.append((since_, None))
    return spans


def _job_wait(runs: Sequence[JobRecord], since: float, until: float) -> WaitRow | None:
    """The job's wait in ``[since, until)``: each span that ends with a start in the
    period, whole (as a first wait always counted), plus, for a job still pending at
    ``until``, the part of that span inside the period. None: the job neither started
    nor waited in the period."""
    total, pending_at_end = 0.0, False
    for a, b in wait_spans(runs):
        if b is not None and since <= b < until:
            total += b - a
        elif a < until and (b is None or b >= until):
            total += until - max(a, since)
            pending_at_end = True
    starts = [r.start for r in runs if r.start is not None and since <= r.start < until]
    if not starts and not pending_at_end:
        return None
    first = runs[0]
    return WaitRow(job_id=first.job_id, team=first.team, user=first.user,
                   submit=min(r.submit for r in runs),
                   start=None if pending_at_end else max(starts), wait=max(0.0, total),
                   started=not pending_at_end)


def _waits(records: Sequence[JobRecord], since: float, until: float) -> list[WaitRow]:
    """One wait per job (not per run), every pending span of it (``wait_spans``)."""
    by_job: dict[str, list[JobRecord]] = {}
    for r in records:
        by_job.setdefault(r.job_id, []).append(r)
    rows = (_job_wait(runs, since, until) for runs in by_job.values())
    return [w for w in rows if w is not None]


def build_report(records: Sequence[JobRecord], teams: Sequence[Team], *, since: float,
                 until: float, prices: Prices | None = None, source: str = "",
                 cluster: str = "", incidents: Sequence[Any] | None = None,
                 incidents_note: str | None = None,
                 notes: Sequence[str] = ()) -> Report:
    """The report of ``[since, until)``. ``incidents`` are ``incidents.Incident``
    objects (None: the source cannot say; ``incidents_note`` says why)."""
    if not (math.isfinite(since) and math.isfinite(until)) or until <= since:
        raise UserError(f"report: the period is empty: since {since} is not before {until}")
    prices = prices or Prices()
    parent = team_tree(teams, (r.team for r in records))
    by_name = {t.name: t for t in teams}
    per_team: dict[str, list[JobRecord]] = {name: [] for name in parent}
    for r in records:
        per_team[r.team].append(r)
    own = {name: _own(by_name.get(name), per_team[name], since, until, prices)
           for name in parent}
    children: dict[str, list[str]] = {name: [] for name in parent}
    for name, p in parent.items():
        if p is not None:
            children[p].append(name)
    for kids in children.values():
        kids.sort()
    hours = (until - since) / 3600.0
    waits = _waits(records, since, until)

    def row(name: str, members: list[str], depth: int) -> TeamRow:
        # A subtree's row sums its members' own figures, each member once.
        by_type: dict[str, float] = {}
        jobs: set[str] = set()
        cpu = cost = unpriced = 0.0
        pre = 0
        g: dict[str, float | None] = {"gpu": None, "cpu": None}
        gh: dict[str, float | None] = {"gpu": None, "cpu": None}
        within: dict[str, float | None] = {"gpu": None, "cpu": None}
        for m in members:
            o = own[m]
            jobs |= {f"{m}\0{j}" for j in o.jobs}  # job ids are per cluster, teams apart
            for k, v in o.gpu_by_type.items():
                by_type[k] = by_type.get(k, 0.0) + v
            cpu += o.cpu_hours
            cost += o.cost
            unpriced += o.unpriced
            pre += o.preemptions
            for k in ("gpu", "cpu"):
                g[k] = _add(g[k], o.guarantee[k])
                gh[k] = _add(gh[k], o.g_hours[k])
                within[k] = _add(within[k], o.within[k])
        member_set = set(members)
        mine = [w for w in waits if w.team in member_set]
        # A job still pending at the end has waited too: it counts (wait so far).
        done = [w.wait for w in mine]
        longest = sorted(mine, key=lambda w: (-w.wait, w.job_id))[:LONGEST]
        idle = {k: None if gh[k] is None else max(0.0, gh[k] - (within[k] or 0.0))  # type: ignore[operator]
                for k in ("gpu", "cpu")}
        return TeamRow(
            team=name, parent=parent.get(name), depth=depth, children=children.get(name, []),
            jobs=len(jobs), gpu_hours=sum(by_type.values()), gpu_hours_by_type=by_type,
            cpu_hours=cpu, guarantee_gpu=g["gpu"], guarantee_cpu=g["cpu"],
            guarantee_gpu_hours=gh["gpu"], guarantee_cpu_hours=gh["cpu"],
            used_gpu_hours_within_guarantee=within["gpu"],
            used_cpu_hours_within_guarantee=within["cpu"],
            idle_guarantee_gpu_hours=idle["gpu"], idle_guarantee_cpu_hours=idle["cpu"],
            cost=cost, unpriced_gpu_hours=unpriced, preemptions=pre,
            wait_p50=percentile(done, 0.5), wait_p90=percentile(done, 0.9),
            longest_waits=longest)

    def subtree(name: str) -> list[str]:
        out = [name]
        for c in children[name]:
            out += subtree(c)
        return out

    rows: list[TeamRow] = []

    def walk(name: str, depth: int) -> None:
        rows.append(row(name, subtree(name), depth))
        for c in children[name]:
            walk(c, depth + 1)

    roots = sorted(n for n, p in parent.items() if p is None)
    for r in roots:
        walk(r, 0)
    total = row("(all)", list(parent), 0)
    total.parent, total.children = None, roots
    inc_rows = None
    if incidents is not None:
        inc_rows = [IncidentRow(kind=i.kind, opened_at=i.opened_at, closed_at=i.closed_at,
                                severity=i.severity, teams=list(i.teams), summary=i.summary)
                    for i in incidents
                    if i.opened_at < until and (i.closed_at is None or i.closed_at >= since)]
    return Report(version=REPORT_VERSION, source=source, cluster=cluster, since=since,
                  until=until, hours=hours, currency=prices.currency, teams=rows,
                  total=total, incidents=inc_rows, incidents_note=incidents_note,
                  notes=list(notes))


def to_builtins(report: Report) -> dict[str, Any]:
    return msgspec.to_builtins(report)  # type: ignore[no-any-return]
