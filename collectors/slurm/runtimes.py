"""Runtime estimates from a user's own history.

Users' time limits are poor predictions of how long jobs run; the mean of the same
user's last two runtimes is a better one for backfilling (Tsafrir, Etsion and Feitelson,
"Backfilling using system-generated predictions rather than user runtime estimates",
IEEE TPDS 2007). For each running and pending job this sets ``Job.runtime_estimate`` to
the mean elapsed time of the user's last two COMPLETED jobs in the same account and
partition that asked for the same (GPUs, nodes, CPUs, QoS, constraint and time limit:
most likely the same job script again), capped at the job's time limit; without any
such run, the last two with the same shape (GPU count and type, node count); without
those, the last two of the same user, account and partition of any shape; otherwise it
stays None. ``Job.runtime_basis`` says which, in words. The closest match comes first
because one user's jobs of one shape still differ: a CPU-only job of 8 CPUs and one of
96, or the same GPUs under another QoS or on other nodes, are different work."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import COMPLETED, PENDING, RUNNING, SUSPENDED, Job

LAST = 2  # how many of the latest runs are averaged
HISTORY = 16  # how many runs of the matching group the snapshot keeps for start windows
_LIVE = frozenset({PENDING, RUNNING, SUSPENDED})

Shape = tuple[tuple[tuple[str, float], ...], int]
Request = tuple[Shape, float, str, str | None, float | None]


def shape(job: Job) -> Shape:
    """GPUs (every ``gpu`` and ``gpu:<type>`` key) and node count."""
    req = job.request
    gpus = tuple(sorted((k, v) for k, v in req.items() if k == "gpu" or k.startswith("gpu:")))
    return gpus, max(1, int(job.nodes_requested or 1))


def request_key(job: Job) -> Request:
    """Everything the user asked for that tells one job script from another."""
    return (shape(job), float(job.request.get("cpu", 0.0)), job.qos, job.constraint,
            job.time_limit)


def describe_shape(s: Shape) -> str:
    gpus, nodes = s
    total = dict(gpus).get("gpu", 0.0)
    typed = [(k[4:], v) for k, v in gpus if k.startswith("gpu:")]
    if typed and len(typed) == 1 and typed[0][1] == total:
        what = f"{_n(total)} {typed[0][0]} GPU{'s' if total != 1 else ''}"
    elif total:
        what = f"{_n(total)} GPU{'s' if total != 1 else ''}"
    else:
        what = "no GPUs"
    return what + (f" on {nodes} nodes" if nodes > 1 else "")


def _n(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}"


def _secs(v: float) -> str:
    # The basis is read beside the TUI's durations: the one human format, not Slurm's
    # D-HH:MM:SS (which is for columns that mirror squeue).
    return human_duration(v)


class _Run(msgspec.Struct, gc=False):
    end: float
    elapsed: float
    shape: Shape
    request: Request


def _runs(history: Iterable[Job]) -> dict[tuple[str, str, str | None], list[_Run]]:
    """Completed runs per (user, account, partition), newest first; one per job id
    and start (sacct and squeue may both show a job that just ended)."""
    seen: set[tuple[str, float]] = set()
    out: dict[tuple[str, str, str | None], list[_Run]] = {}
    for j in history:
        if j.state != COMPLETED or j.start_time is None or j.end_time is None:
            continue
        elapsed = j.end_time - j.start_time
        if elapsed < 0:
            continue
        key = (j.id, j.start_time)
        if key in seen:
            continue
        seen.add(key)
        out.setdefault((j.user, j.team, j.partition), []).append(
            _Run(end=j.end_time, elapsed=elapsed, shape=shape(j), request=request_key(j))
        )
    for runs in out.values():
        runs.sort(key=lambda r: r.end, reverse=True)
    return out


Estimate = tuple[float, str, list[float], bool]


def estimate(job: Job, runs: list[_Run]) -> Estimate | None:
    """(seconds, basis, history, weak) from the user's runs in the job's account and
    partition; history is the run times of the matching group (up to HISTORY, newest
    first, capped at the job's limit), from which the core samples start windows; weak
    where they are runs of another request (the same shape, or any): on the fidelity
    workloads those were 20-55 % off where the same request's were within 15 %."""
    if not runs:
        return None
    want = shape(job)
    exact = request_key(job)
    asked_all = [r for r in runs if r.request == exact]
    same_all = [r for r in runs if r.shape == want]
    asked, same = asked_all[:LAST], same_all[:LAST]
    where = f"{job.team}/{job.partition}" if job.partition else job.team
    if asked:
        cpus = [f"{_n(exact[1])} CPU{'s' if exact[1] != 1 else ''}"] if exact[1] else []
        asked_for = [describe_shape(want), *cpus, f"QoS {job.qos}"] \
            + ([f"constraint {job.constraint}"] if job.constraint else [])
        picked, what = asked, f"in {where} with the same request ({', '.join(asked_for)})"
        group = asked_all
    elif same:
        picked, what = same, f"in {where} with {describe_shape(want)}"
        group = same_all
    else:
        picked, what = runs[:LAST], f"in {where} (any shape)"
        group = runs
    mean = sum(r.elapsed for r in picked) / len(picked)
    runs_word = f"last {len(picked)} runs" if len(picked) > 1 else "last run"
    times = ", ".join(_secs(r.elapsed) for r in picked)
    basis = f"mean of {job.user}'s {runs_word} {what} ({times})"
    cap = job.time_limit if job.time_limit is not None else float("inf")
    history = [min(r.elapsed, cap) for r in group[:HISTORY]]
    if mean > cap:
        mean = cap
        basis += f", capped at the time limit ({_secs(cap)})"
    return mean, basis, history, not asked


def with_runtime_estimates(jobs: list[Job], history: Iterable[Job]) -> list[Job]:
    """The jobs, with runtime_estimate/runtime_basis set on running and pending ones
    (new Job objects where set: an earlier snapshot is never changed)."""
    by_key = _runs(history)
    if not by_key:
        return jobs
    cache: dict[tuple[object, ...], Estimate | None] = {}
    out: list[Job] = []
    for j in jobs:
        if j.state not in _LIVE:
            out.append(j)
            continue
        runs = by_key.get((j.user, j.team, j.partition))
        if not runs:
            out.append(j)
            continue
        ck = (j.user, j.team, j.partition, request_key(j))
        if ck in cache:
            got = cache[ck]
        else:
            got = cache[ck] = estimate(j, runs)
        if got is None:
            out.append(j)
        else:
            out.append(msgspec.structs.replace(j, runtime_estimate=got[0], runtime_basis=got[1],
                                               runtime_history=got[2],
                                               runtime_history_weak=got[3]))
    return out
