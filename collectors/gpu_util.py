"""Per-GPU exporter series (DCGM, nvidia_gpu_exporter) joined to the jobs that held them.

A pure function: jobs (with the GPUs they hold, ``Job.gpus``, and their start and end)
and per-GPU series in, one ``JobGpuUtil`` per job out, with a named warning for every
value refused. No I/O; the Prometheus side (collectors/gpu_prometheus.py) fetches.

The join rule (docs/gpu-util.md): a series' value at ``t`` holds until its next sample,
at most ``max_hold`` seconds; each piece of that step function is split among the holds
of its GPU, so a job that ends at 10:30 on GPU 3 of node a gets the piece up to 10:30 and
the job that starts there the rest. A series is keyed by node and GPU index (Slurm); a
series with no such hold but with ``namespace`` and ``pod`` labels goes to the job
``namespace/pod`` (Kubernetes: the exporter's pod mapping), over the job's run.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import lt, mul, sub

from quotatop.collectors.model import Job, JobGpuUtil

# A sample time outside [0, the year 10000) is not a time (as prometheus_source's).
MAX_TIME = 253402300800.0
# Framebuffer above 16 TiB on one GPU is not memory but a broken answer (the largest GPU
# holds some 0.2 TiB).
MAX_FB_MIB = float(16 << 20)

UTIL = "util"  # percent, 0..100 (DCGM_FI_DEV_GPU_UTIL)
FB = "fb"  # MiB (DCGM_FI_DEV_FB_USED)
ENGINE = "engine"  # ratio, 0..1 (DCGM_FI_PROF_GR_ENGINE_ACTIVE)
_BOUNDS = {UTIL: (0.0, 100.0), FB: (0.0, MAX_FB_MIB), ENGINE: (0.0, 1.0)}
_WHAT = {UTIL: "utilization percent", FB: "framebuffer MiB", ENGINE: "engine-active ratio"}


@dataclass(slots=True)
class GpuSeries:
    """One GPU's samples of one kind (UTIL, FB or ENGINE): (time, value) pairs."""

    kind: str
    node: str
    gpu: int
    points: list[tuple[float, float]] = field(default_factory=list)
    namespace: str | None = None  # the exporter's pod mapping (Kubernetes)
    pod: str | None = None


@dataclass(slots=True)
class _Acc:
    """One job's sums while the series are walked."""

    observed: float = 0.0
    busy: float = 0.0
    fb_seconds: float = 0.0
    fb_integral: float = 0.0
    fb_peak: float | None = None
    engine_seconds: float = 0.0
    engine_integral: float = 0.0


# One hold: [start, end) of one job on one GPU, the job's index in the input.
_Hold = tuple[float, float, int]


def _refusal(kind: str, refused: list[str]) -> str:
    """One line per kind of refusal: the count and the first three (200k bad samples are
    one line, not 200k)."""
    head = "; ".join(refused[:3]) + ("; ..." if len(refused) > 3 else "")
    return f"gpu util: {len(refused)} {kind} refused: {head}"[:300]


def join_gpu_util(
    jobs: Sequence[Job],
    series: Iterable[GpuSeries],
    *,
    since: float,
    until: float,
    max_hold: float = 120.0,
) -> tuple[list[JobGpuUtil], list[str]]:
    """Per job with a GPU held within [since, until]: its utilization, and the warnings.

    A job's GPUs are ``Job.gpus``; one with none but a GPU request is matched by pod
    (``Job.id`` is ``namespace/pod``). Refused, each named in a warning and never counted: a
    sample that is NaN, outside its kind's bounds or at a time that is not one, a second
    sample of one series at the same time, a second series of one GPU and kind, a GPU
    index below 0, and the later of two jobs holding one GPU at once."""
    holds: dict[tuple[str, int], list[_Hold]] = {}
    pods: dict[str, tuple[float, float, int]] = {}
    allocated: dict[int, float] = {}
    names: dict[int, list[str]] = {}
    lost: dict[int, set[tuple[str, int]]] = {}  # GPUs refused a job: held by another
    overlaps: list[str] = []
    for i, job in enumerate(jobs):
        start, end = job.start_time, job.end_time
        if start is None or not math.isfinite(start):
            continue
        s0 = start if start > since else since
        e0 = until if end is None or not math.isfinite(end) or end > until else end
        if e0 <= s0:
            continue
        gpus: dict[str, list[int]] = job.gpus
        if gpus:
            hold = (s0, e0, i)
            n = 0
            for node, idxs in gpus.items():
                for idx in idxs:
                    holds.setdefault((node, idx), []).append(hold)
                n += len(idxs)
            allocated[i] = n * (e0 - s0)
        elif job.request.get("gpu", 0.0) > 0:
            pods[job.id] = (s0, e0, i)
    for key, hs in holds.items():
        if len(hs) == 1:
            continue
        hs.sort()
        kept: list[_Hold] = [hs[0]]
        for h in hs[1:]:
            if h[0] < kept[-1][1]:
                a, b = jobs[kept[-1][2]].id, jobs[h[2]].id
                overlaps.append(f"GPU {key[0]}:{key[1]} held by jobs {a} and {b} at once")
                allocated[h[2]] -= h[1] - h[0]
                lost.setdefault(h[2], set()).add(key)
                continue
            kept.append(h)
        if len(kept) < len(hs):
            hs[:] = kept
    accs: dict[int, _Acc] = {}
    refused: dict[str, list[str]] = {}
    seen: set[tuple[str, str, int]] = set()
    pod_gpus: dict[int, set[str]] = {}
    plans: dict[tuple[str, int], tuple[list[float], int, list[float], list[_Share]]] = {}
    for s in series:
        where = f"GPU {s.node}:{s.gpu}"
        lo, hi = _BOUNDS[s.kind]
        if s.gpu < 0:
            refused.setdefault("series", []).append(f"{where}: {s.gpu} is not a GPU index")
            continue
        if (s.kind, s.node, s.gpu) in seen:
            refused.setdefault("series", []).append(
                f"{where}: a second {_WHAT[s.kind]} series (the first kept)")
            continue
        seen.add((s.kind, s.node, s.gpu))
        hs = holds.get((s.node, s.gpu))
        if hs is None and s.namespace is not None and s.pod is not None:
            pod = pods.get(f"{s.namespace}/{s.pod}")
            if pod is not None:
                hs = [pod]
                pod_gpus.setdefault(pod[2], set()).add(f"{s.node}:{s.gpu}")
        if not hs:
            continue  # a GPU no job held in the window: idle, nobody's
        ts, vs = _checked(s, where, lo, hi, refused)
        if not ts:
            continue
        plan = plans.get((s.node, s.gpu))
        if plan is None or plan[0] != ts:  # another query's times: a plan of its own
            lens, shares = _plan(ts, hs, since, until, max_hold)
            plan = plans[(s.node, s.gpu)] = (ts, max(bisect_right(ts, since) - 1, 0),
                                             lens, shares)
        if plan[2]:
            _apply(s.kind, vs, plan[1], plan[2], plan[3], accs)
    for i, gs in pod_gpus.items():
        names[i] = sorted(gs)
    for i, (s0, e0, _) in ((p[2], p) for p in pods.values()):
        allocated[i] = jobs[i].request.get("gpu", 0.0) * (e0 - s0)
    out: list[JobGpuUtil] = []
    none = _Acc()
    for i in sorted(allocated):
        job = jobs[i]
        a = accs.get(i, none)
        gone = lost.get(i, ())
        gpu_names = names.get(i) or [f"{n}:{x}" for n, xs in job.gpus.items() for x in xs
                                     if (n, x) not in gone]
        if not gpu_names:
            continue  # every GPU it claimed was another job's
        out.append(JobGpuUtil(
            job=job.id, user=job.user, team=job.team,
            gpus=gpu_names, since=since, until=until,
            allocated_gpu_seconds=allocated[i], observed_gpu_seconds=a.observed,
            busy_gpu_seconds=a.busy,
            mean_util_percent=100.0 * a.busy / a.observed if a.observed > 0 else None,
            mean_fb_mib=a.fb_integral / a.fb_seconds if a.fb_seconds > 0 else None,
            peak_fb_mib=a.fb_peak,
            engine_active_percent=(100.0 * a.engine_integral / a.engine_seconds
                                   if a.engine_seconds > 0 else None)))
    warnings = [_refusal("GPU holds", overlaps)] if overlaps else []
    warnings += [_refusal(kind, lines) for kind, lines in refused.items()]
    return out, warnings


def _checked(s: GpuSeries, where: str, lo: float, hi: float,
             refused: dict[str, list[str]]) -> tuple[list[float], list[float]]:
    """The series' times and values in time order, each impossible point left out and
    named."""
    if not s.points:
        return [], []
    ts, vs = map(list, zip(*s.points, strict=True))
    # The common case (times strictly rising), checked in C-level passes (a 2,000-GPU
    # hour is 0.25M points): a NaN or an infinity makes the sum non-finite, and without
    # one min/max are exact.
    if (math.isfinite(sum(ts)) and math.isfinite(sum(vs)) and ts[0] >= 0.0
            and ts[-1] < MAX_TIME and min(vs) >= lo and max(vs) <= hi
            and all(map(lt, ts, ts[1:]))):
        return ts, vs
    ts, vs = [], []
    for t, v in sorted(s.points, key=lambda p: p[0] if math.isfinite(p[0]) else -1.0):
        if not (math.isfinite(t) and 0.0 <= t < MAX_TIME):
            refused.setdefault("samples", []).append(f"{where}: {t!r} is not a time")
        elif not (math.isfinite(v) and lo <= v <= hi):
            refused.setdefault("samples", []).append(
                f"{where} at {t:.0f}: {v!r} is not a {_WHAT[s.kind]}")
        elif ts and t == ts[-1]:
            refused.setdefault("samples", []).append(
                f"{where} at {t:.0f}: a second sample of the same time")
        else:
            ts.append(t)
            vs.append(v)
    return ts, vs


# One hold's share of a series: (job index, first piece, end piece, seconds cut off the
# last piece, seconds of the piece before the first, first piece touched, seconds).
_Share = tuple[int, int, int, float, float, int, float]


def _plan(ts: list[float], holds: list[_Hold], since: float, until: float,
          max_hold: float) -> tuple[list[float], list[_Share]]:
    """Each piece [t_k, min(t_k+1, t_k + max_hold, until)) of a series split among the
    holds of its GPU: the pieces' lengths, and per hold the pieces that start inside it
    (bisection) with the two pieces cut by its start and its end. Made from the times
    alone, so a GPU's utilization and framebuffer series (one query's times) share it;
    a GPU costs its points plus log(points) a hold."""
    k0 = max(bisect_right(ts, since) - 1, 0)  # the last point at or before since
    k1 = bisect_left(ts, until)
    if k1 <= k0:
        return [], []
    if k0 or k1 < len(ts):
        ts = ts[k0:k1]
    los = ts
    if ts[0] < since:
        los = ts.copy()
        los[0] = since
    his = ts[1:]
    his.append(until)
    gaps = list(map(sub, his, ts))
    capped = max(gaps) > max_hold
    if capped:  # a gap in the series: a sample holds max_hold at most
        his = [t + max_hold if g > max_hold else h
               for t, g, h in zip(ts, gaps, his, strict=True)]
    lens = gaps if los is ts and not capped else list(map(sub, his, los))
    shares: list[_Share] = []
    p_len = list(accumulate(lens, initial=0.0))
    b = 0
    for s0, e0, i in holds:
        a = bisect_left(los, s0, b)
        b = bisect_left(los, e0, a)
        length = p_len[b] - p_len[a]
        cut = part = 0.0
        if b > a and his[b - 1] > e0:  # the last piece runs past the hold's end
            cut = his[b - 1] - e0  # los[b - 1] lies inside the hold
        first = a
        if a > 0 and his[a - 1] > s0:  # a piece begun before the hold runs into it
            part = min(his[a - 1], e0) - s0
            first = a - 1
        length += part - cut
        if length > 0:
            shares.append((i, a, b, cut, part, first, length))
    return lens, shares


def _apply(kind: str, vs: list[float], k0: int, lens: list[float], shares: list[_Share],
           accs: dict[int, _Acc]) -> None:
    """One series' values summed over each hold's share of its pieces."""
    if k0:
        vs = vs[k0:k0 + len(lens)]
    p_val = list(accumulate(map(mul, lens, vs), initial=0.0))
    for i, a, b, cut, part, first, length in shares:
        total = p_val[b] - p_val[a]
        if cut:
            total -= cut * vs[b - 1]
        if part:
            total += part * vs[a - 1]
        acc = accs.get(i)
        if acc is None:
            acc = accs[i] = _Acc()
        if kind == UTIL:
            acc.observed += length
            acc.busy += total / 100.0
        elif kind == FB:
            acc.fb_seconds += length
            acc.fb_integral += total
            peak = max(vs[first:b]) if b > first else vs[first]
            if acc.fb_peak is None or peak > acc.fb_peak:
                acc.fb_peak = peak
        else:
            acc.engine_seconds += length
            acc.engine_integral += total
