"""The quota advisor behind ``quotatop advise`` (docs/review.md, "quotatop advise"): a
period's real jobs simulated through the core once per candidate quota split, each
candidate scored on waits, utilisation, fairness and preemptions, the Pareto frontier
and a recommendation against the current quotas. No I/O and no CLI here: the command
reads the trace, opens the executor (a local process pool or a Dask client) and prints.

A candidate sets, per team, a guarantee (Kueue nominalQuota) and a max (guarantee plus
borrowing limit; None: borrow without limit). Every team shares the cluster-wide cohort,
so a team over its guarantee borrows the others' unused guarantee and is preempted back
(Kueue reclaimWithinCohort) when a lender needs it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import msgspec
from msgspec import Struct

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import Snapshot, Team
from quotatop.simulation.traces.model import Trace

# Borrowing limits tried for every guarantee split: max = guarantee (no borrowing),
# max = 1.5 × guarantee, and no max (borrow all the cohort's idle guarantee).
BORROW = (("max=g", 1.0), ("max=1.5g", 1.5), ("unlimited", None))
PERCENTILES = (0.50, 0.75, 0.90)
SPLIT = (60.0, 30.0, 10.0)  # the 60-30-10 split, largest team first
MOVES = (5.0, 10.0)  # percentage points moved between two teams for the neighbours
CURRENT = "current"


class Workload(Struct, kw_only=True):
    """Everything a worker needs, sent to each worker once: the core's cluster and
    jobs (encoded once: 100k SimJobs re-encoded per candidate would cost more than some
    simulations), and per trace job what the metrics need."""

    path: str
    resource: str  # the trace's one resource: "gpu", or "cpu" for SWF processors
    capacity: float
    teams: list[str]  # largest total work first: the order of the 60-30-10 split
    cluster: Snapshot  # nodes and QoS; its teams are replaced per candidate
    jobs: bytes  # msgpack of the list of SimJob
    policy: bytes  # msgpack Policy
    members: list[list[str]]  # the core's job ids of each trace job (a gang: several)
    team_of: list[int]  # index into teams
    size: list[float]  # the job's request of resource, whole job
    duration: list[float]
    submit: list[float]
    largest: dict[str, float]  # each team's largest job: a max below it rejects that job
    demand: dict[str, dict[str, float]]  # team -> "p50"... -> concurrent demand


class Candidate(Struct, kw_only=True, frozen=True):
    """One quota setting. ``guarantee`` None: no quota at all (each team unlimited and
    neither lending nor borrowing, as ``quotatop simulate`` runs a trace)."""

    name: str
    kind: str  # current | split | percentile | neighbour
    guarantee: dict[str, float] | None
    max: dict[str, float | None] | None  # per team; None: no max (unlimited borrowing)
    borrow: str  # max=g | max=1.5g | unlimited | as given


class Result(Struct, kw_only=True):
    """The metrics of one candidate. Waits in seconds, from submit to the final start
    (a requeued job's lost run counts as waiting)."""

    name: str
    candidate: Candidate
    mean_wait: float
    p95_wait: float
    team_mean_wait: dict[str, float]
    team_p95_wait: dict[str, float]
    service: dict[str, float]  # per team: work / (work + work-weighted wait), in (0, 1]
    utilization: float
    jain: float
    preemptions: int
    started: int
    unstarted: int  # rejected or never started: such a candidate is not on the frontier


# ------------------------------------------------------------------ the workload


def build_workload(trace: Trace, nodes: int, per_node: float, policy: str,
                   resolution: float) -> Workload:
    """The trace as the core sees it (quotatop.simulation.trace_simulate.core_inputs) under
    ``policy`` with preemption on, so borrowed capacity is reclaimed."""
    from quotatop.simulation.trace_simulate import core_inputs, core_policy, members

    (res, cap), = trace.capacity.items()
    cluster, jobs = core_inputs(trace, nodes, per_node)
    work: dict[str, float] = {}
    largest: dict[str, float] = {}
    for j in trace.jobs:
        size = j.request.get(res, 0.0)
        work[j.team] = work.get(j.team, 0.0) + size * j.duration
        largest[j.team] = max(largest.get(j.team, 0.0), size)
    teams = sorted(work, key=lambda t: (-work[t], t))
    index = {t: i for i, t in enumerate(teams)}
    enc = msgspec.msgpack.Encoder()
    return Workload(
        path=trace.path, resource=res, capacity=cap, teams=teams, cluster=cluster,
        jobs=enc.encode(jobs), policy=enc.encode(core_policy(policy, resolution, True)),
        members=[members(j) for j in trace.jobs], team_of=[index[j.team] for j in trace.jobs],
        size=[j.request.get(res, 0.0) for j in trace.jobs],
        duration=[j.duration for j in trace.jobs], submit=[j.submit_time for j in trace.jobs],
        largest=largest, demand=demand_percentiles(trace, teams, res))


def demand_percentiles(trace: Trace, teams: Sequence[str], res: str,
                       qs: Iterable[float] = PERCENTILES) -> dict[str, dict[str, float]]:
    """Time-weighted percentiles of each team's concurrent demand over the period (first
    submit to last end): the sum of the requests of its jobs running then, as the traced
    cluster ran them (recorded start, else submit: NASA records no waits). Time, not
    samples, weighs the levels: a team idle most of the period has a p50 of 0."""
    qs = tuple(qs)
    steps: dict[str, list[tuple[float, float]]] = {t: [] for t in teams}
    t0, t1 = math.inf, -math.inf
    for j in trace.jobs:
        s = j.recorded_start if j.recorded_start is not None else j.submit_time
        size = j.request.get(res, 0.0)
        steps[j.team] += [(s, size), (s + j.duration, -size)]
        t0, t1 = min(t0, j.submit_time, s), max(t1, s + j.duration)
    out = {}
    for team in teams:
        levels = _levels(steps[team], t0, t1)
        out[team] = {f"p{round(q * 100)}": _weighted_percentile(levels, q) for q in qs}
    return out


def _levels(steps: list[tuple[float, float]], t0: float, t1: float) -> list[tuple[float, float]]:
    """(level, how long) of a step function of +/- changes over [t0, t1]."""
    steps.sort()
    out, level, at = [], 0.0, t0
    for t, d in steps:
        if t > at:
            out.append((level, t - at))
            at = t
        level += d
    if t1 > at:
        out.append((level, t1 - at))
    return out


def _weighted_percentile(levels: list[tuple[float, float]], q: float) -> float:
    total = sum(w for _, w in levels)
    if total <= 0:
        return max((v for v, _ in levels), default=0.0)
    acc = 0.0
    for v, w in sorted(levels):
        acc += w
        if acc >= q * total - 1e-9 * total:
            return max(0.0, round(v, 9))  # float sums of +size/-size leave 1e-13 dust
    return max(0.0, sorted(levels)[-1][0])


# ------------------------------------------------------------------ candidates


def split_shares(teams: Sequence[str], split: Sequence[float] = SPLIT) -> dict[str, float]:
    """The 60-30-10 split in percent, largest team first: the first teams take the first
    parts, and the last part is shared equally by every remaining team (two teams:
    60-40; five: 60-30-3.3-3.3-3.3)."""
    n = len(teams)
    if n == 0:
        return {}
    if n <= len(split) - 1:
        parts = list(split[:n])
        parts[-1] += sum(split[n:])
    else:
        head = list(split[:-1])
        rest = split[-1] / (n - len(head))
        parts = head + [rest] * (n - len(head))
    return dict(zip(teams, parts, strict=True))


def to_amounts(pct: dict[str, float], capacity: float) -> dict[str, float]:
    """Percent shares to amounts summing to the capacity; whole units when the capacity
    is whole (largest remainder), so "77 cpu" reads as a quota an admin would set."""
    raw = {t: capacity * p / 100.0 for t, p in pct.items()}
    if capacity != int(capacity):
        return {t: round(v, 3) for t, v in raw.items()}
    floor = {t: float(math.floor(v + 1e-9)) for t, v in raw.items()}
    left = round(capacity - sum(floor.values()))
    for t in sorted(raw, key=lambda t: (-(raw[t] - floor[t]), t))[:max(left, 0)]:
        floor[t] += 1.0
    return floor


def _with_borrow(name: str, kind: str, g: dict[str, float], wl: Workload,
                 borrow: str, factor: float | None) -> Candidate:
    # A max below a team's largest job would reject that job at submission, which no
    # admin means by a borrowing limit: the max is raised to the largest job. A max at
    # or over the capacity caps nothing: it is no max (and the same candidate as
    # unlimited, so it is not simulated twice).
    mx: dict[str, float | None] = {}
    for t in g:
        m = None if factor is None else max(g[t] * factor, wl.largest.get(t, 0.0))
        mx[t] = None if m is None or m >= wl.capacity else m
    if all(m is None for m in mx.values()):
        borrow = "unlimited"  # named for what it is; the later "unlimited" is its duplicate
    return Candidate(name=f"{name} {borrow}", kind=kind, guarantee=g, max=mx, borrow=borrow)


def candidates(wl: Workload, *, current: Candidate | None = None,
               limit: int | None = None) -> list[Candidate]:
    """The candidates, first the current quotas, then the 60-30-10 split, the demand
    percentile splits, and the 60-30-10 split's neighbours (5 then 10 points moved
    from one team to another, pairs of the largest teams first), each with the three
    borrowing limits; the first ``limit`` of them, without duplicates."""
    cur = current or Candidate(name=CURRENT, kind="current", guarantee=None, max=None,
                               borrow="no quota")
    out: list[Candidate] = [cur]
    seen = {_key(cur)}

    def add(name: str, kind: str, pct: dict[str, float]) -> bool:
        g = to_amounts(pct, wl.capacity)
        for borrow, factor in BORROW:
            c = _with_borrow(name, kind, g, wl, borrow, factor)
            if _key(c) not in seen:
                seen.add(_key(c))
                out.append(c)
            if limit is not None and len(out) >= limit:
                return False
        return True

    for name, kind, pct in _splits(wl):  # lazily: 1,000 teams make 2M neighbour pairs
        if (limit is not None and len(out) >= limit) or not add(name, kind, pct):
            break
    return out


def _splits(wl: Workload) -> Iterator[tuple[str, str, dict[str, float]]]:
    """(name, kind, percent per team) of every guarantee split, in candidate order."""
    base = split_shares(wl.teams)
    yield "60-30-10", "split", base
    for q in PERCENTILES:
        key = f"p{round(q * 100)}"
        d = {t: wl.demand[t][key] for t in wl.teams}
        total = sum(d.values())
        # Guarantees below the capacity would strand the rest: nobody can borrow
        # capacity that is no one's guarantee. So the percentiles give the proportions.
        pct = ({t: 100.0 * v / total for t, v in d.items()} if total > 0
               else {t: 100.0 / len(d) for t in d})
        yield f"demand {key}", "percentile", pct
    for step in MOVES:
        for a in wl.teams:
            for b in wl.teams:
                if a == b or base[a] < step:
                    continue
                pct = dict(base)
                pct[a] -= step
                pct[b] += step
                yield f"60-30-10, {step:g} pts {a}→{b}", "neighbour", pct


def _key(c: Candidate) -> tuple[Any, ...]:
    return (tuple(sorted((c.guarantee or {}).items())),
            tuple(sorted((c.max or {}).items(), key=lambda kv: kv[0])))


# ------------------------------------------------------------------ one simulation


def cluster_for(wl: Workload, c: Candidate) -> Snapshot:
    """The workload's cluster with the candidate's quotas on its teams."""
    res = wl.resource
    teams = []
    for t in wl.teams:
        g = None if c.guarantee is None or t not in c.guarantee else {res: c.guarantee[t]}
        m = None if c.max is None or c.max.get(t) is None else {res: c.max[t]}
        teams.append(Team(name=t, guarantee=g, max=m))  # type: ignore[arg-type]
    return msgspec.structs.replace(wl.cluster, teams=teams)


def simulate(wl: Workload, c: Candidate) -> Any:  # quotatop.scheduler_core.types.SimResult
    """The core's SimResult for the candidate; ValueError from the core as is."""
    from quotatop import scheduler_core

    payload = msgspec.msgpack.encode({"cluster": cluster_for(wl, c),
                                      "jobs": msgspec.Raw(wl.jobs)})
    return scheduler_core.simulate(payload, wl.policy)


def run_candidate(wl: Workload, c: Candidate) -> Result:
    """Simulate one candidate and score it; what a worker runs."""
    result = simulate(wl, c)
    # A job preempted and requeued starts again from scratch: its outcome keeps the
    # first start, but its wait lasts until the start it ran to the end from, end −
    # run time; the run it lost counts as waiting.
    by_id = {o.job_id: (o.start, o.end) for o in result.jobs}
    starts: list[float | None] = []
    ends: list[float | None] = []
    for k, ids in enumerate(wl.members):
        e = [by_id[i][1] for i in ids]
        s = [by_id[i][0] if x is None else x - wl.duration[k]
             for i, x in zip(ids, e, strict=True)]
        # A gang starts when its workers do and ends with its last; a job the core
        # rejected or never started has no start.
        starts.append(None if any(x is None for x in s) else min(s))  # type: ignore[type-var]
        ends.append(None if any(x is None for x in e) else max(e))  # type: ignore[type-var]
    return score(wl, c, starts, ends, int(result.metrics.preemptions))


def score(wl: Workload, c: Candidate, starts: Sequence[float | None],
          ends: Sequence[float | None], preemptions: int) -> Result:
    """The metrics from each trace job's start and end.

    Utilisation is useful work (each started job's run time × its request) over the
    capacity × the span from the first submit to the last end, the core's formula.
    Fairness: over a whole period every job eventually runs, so each team's raw service
    equals its demand in every candidate; what quotas change is how long it waits for
    it. A team's normalised service is its work over its work plus its work-weighted
    wait (1: never waited), and Jain's index is taken over those."""
    n = len(wl.teams)
    waits: list[list[float]] = [[] for _ in range(n)]
    work, held = [0.0] * n, [0.0] * n
    used, first, last = 0.0, math.inf, -math.inf
    for k, s in enumerate(starts):
        first = min(first, wl.submit[k])
        if s is None:
            continue
        t, size, dur = wl.team_of[k], min(wl.size[k], wl.capacity), wl.duration[k]
        wait = s - wl.submit[k]
        waits[t].append(wait)
        work[t] += size * dur
        held[t] += size * (wait + dur)
        used += size * dur
        e = ends[k]
        last = max(last, e if e is not None else s + dur)
    everyone = [w for ws in waits for w in ws]
    span = last - first if everyone else 0.0
    service = [work[t] / held[t] if held[t] > 0 else 1.0 for t in range(n)]
    nan = float("nan")
    return Result(
        name=c.name, candidate=c,
        mean_wait=sum(everyone) / len(everyone) if everyone else nan,
        p95_wait=percentile(everyone, 0.95) if everyone else nan,
        team_mean_wait={wl.teams[t]: (sum(ws) / len(ws) if ws else nan)
                        for t, ws in enumerate(waits)},
        team_p95_wait={wl.teams[t]: (percentile(ws, 0.95) if ws else nan)
                       for t, ws in enumerate(waits)},
        service=dict(zip(wl.teams, service, strict=True)),
        utilization=used / (wl.capacity * span) if span > 0 else 0.0,
        jain=jain(service), preemptions=preemptions, started=len(everyone),
        unstarted=len(starts) - len(everyone))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 1]) of a non-empty sequence."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def jain(xs: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n Σx²): 1 when all are equal, 1/n when one
    holds everything; 1 for an empty or all-zero list (nobody is treated worse)."""
    sq = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * sq) if sq > 0 else 1.0


# ------------------------------------------------------------------ the sweep

_WORKLOAD: Workload | None = None  # a pool worker's copy, set once by its initializer


def _init_worker(wl: Workload) -> None:
    global _WORKLOAD
    _WORKLOAD = wl


def _run_in_worker(c: Candidate) -> Result:
    assert _WORKLOAD is not None, "pool worker without a workload"
    return run_candidate(_WORKLOAD, c)


def sweep_local(wl: Workload, cands: Sequence[Candidate], workers: int) -> list[Result]:
    """Every candidate, in order, on a pool of ``workers`` processes (the workload is
    pickled once per process, not per candidate); ``workers`` 0: in this process."""
    if workers <= 0:
        return [run_candidate(wl, c) for c in cands]
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                             initargs=(wl,)) as pool:
        # chunksize 1: one simulation is long enough that the round trip does not
        # matter, and larger chunks would leave a worker idle at the end.
        return list(pool.map(_run_in_worker, cands, chunksize=1))


def sweep_dask(client: Any, wl: Workload, cands: Sequence[Candidate]) -> list[Result]:
    """Every candidate, in order, on a dask.distributed ``client``'s cluster: the
    workload is scattered to every worker once, then one task per candidate."""
    wl_future = client.scatter(wl, broadcast=True, hash=False)
    # pure=False: two candidates never share a result key, even if equal.
    futures = client.map(run_candidate, [wl_future] * len(cands), list(cands), pure=False)
    return list(client.gather(futures))


# ------------------------------------------------------------------ the verdict


def dominates(a: Result, b: Result) -> bool:
    """a is no worse than b on mean wait (lower), Jain and utilisation (higher), and
    better on one."""
    no_worse = (a.mean_wait <= b.mean_wait and a.jain >= b.jain
                and a.utilization >= b.utilization)
    better = (a.mean_wait < b.mean_wait or a.jain > b.jain
              or a.utilization > b.utilization)
    return no_worse and better


def frontier(results: Sequence[Result]) -> list[int]:
    """Indexes of the non-dominated results among those that started every job (a
    candidate that starves jobs leaves them out of its waits: not comparable)."""
    ok = [i for i, r in enumerate(results) if r.unstarted == 0]
    return [i for i in ok if not any(dominates(results[j], results[i]) for j in ok if j != i)]


def worst_p95(r: Result) -> tuple[float, str]:
    """The largest per-team p95 wait and its team."""
    pairs = [(w, t) for t, w in r.team_p95_wait.items() if not math.isnan(w)]
    return max(pairs, default=(math.nan, ""))


P95_SLACK = 0.05  # worst-team p95 waits within 5 % (or a minute) count as equal
JAIN_SLACK = 0.01  # Jain's indexes within 0.01 count as equal


def recommend(results: Sequence[Result], front: Sequence[int]) -> int | None:
    """On the frontier: the candidates whose worst-off team waits least at p95 (the
    complaint an advisor is asked about), within P95_SLACK; of those, the fairest,
    within JAIN_SLACK; of those, the lowest mean wait, then the higher utilisation,
    then the earlier candidate (the current quotas first). The slack keeps a 0.001
    better Jain from outvoting a wait an admin would notice."""
    if not front:
        return None
    best = min(worst_p95(results[i])[0] for i in front)
    pool = [i for i in front
            if worst_p95(results[i])[0] <= best * (1 + P95_SLACK) + 60.0]
    fairest = max(results[i].jain for i in pool)
    pool = [i for i in pool if results[i].jain >= fairest - JAIN_SLACK]
    return min(pool, key=lambda i: (results[i].mean_wait, -results[i].utilization, i))


def fmt_wait(s: float) -> str:
    """42m, 3h10m, 2d4h: the one human format (collectors/human.py), as the TUI and the
    core's reasons write a wait; a dash for a wait no simulation measured."""
    if math.isnan(s):
        return "–"
    return human_duration(s)


def reasons(cur: Result, rec: Result) -> list[str]:
    """Why ``rec`` over ``cur``, in numbers."""
    if rec is cur:
        return []
    out = []
    named = ""
    deltas = [(cur.team_p95_wait[t] - rec.team_p95_wait[t], t) for t in cur.team_p95_wait
              if not math.isnan(cur.team_p95_wait[t]) and not math.isnan(rec.team_p95_wait[t])]
    if deltas:
        d, t = max(deltas)
        named = t
        verb = "cuts" if d > 0 else ("keeps" if d == 0 else "raises")
        out.append(f"{verb} {t} p95 wait from {fmt_wait(cur.team_p95_wait[t])} to "
                   f"{fmt_wait(rec.team_p95_wait[t])}")
    cw, rw = worst_p95(cur), worst_p95(rec)
    if cw[1] and rw[1] and not cw[1] == rw[1] == named:  # the line above said it
        out.append(f"worst team p95 {fmt_wait(cw[0])} ({cw[1]}) → {fmt_wait(rw[0])} ({rw[1]})")
    if cur.unstarted != rec.unstarted:
        out.append(f"jobs never started {cur.unstarted} → {rec.unstarted}")
    out.append(f"Jain {cur.jain:.2f} → {rec.jain:.2f}")
    pts = 100 * (rec.utilization - cur.utilization)
    out.append(f"utilisation {'+' if pts >= 0 else '−'}{abs(pts):.1f} pt "
               f"({cur.utilization:.1%} → {rec.utilization:.1%})")
    out.append(f"mean wait {fmt_wait(cur.mean_wait)} → {fmt_wait(rec.mean_wait)}")
    if cur.preemptions or rec.preemptions:
        out.append(f"preemptions {cur.preemptions} → {rec.preemptions}")
    return out


def to_builtins(r: Result) -> dict[str, Any]:
    """A result as JSON-ready builtins (NaN, for a team with no started job, as null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return v
    return clean(msgspec.to_builtins(r))

