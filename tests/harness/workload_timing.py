"""How much the fidelity workload's start order hangs on a second's timing.

A real scheduler answers a job's end 0–2 s later, a job runs its ``sleep`` plus a
launch overhead, and sacct keeps whole seconds, so the history-based estimate of a
runtime is off by up to a second or two. Where two ends that free room for different
jobs fall that close together, the order in which Slurm starts the jobs behind them
depends on which of its threads ran first: no predictor can call it, and one such
call moved Kendall tau from 0.99 to 0.89 between two runs of an earlier workload.

So the workload of tests/harness/fidelity.py is chosen to have no such pairs, and
this module measures that: the core plays the fill and the queue through on a
snapshot of the harness cluster (its nodes, partitions, QoS, limits, and each kind's
priority as Slurm reported it), once with every job running ``sleep`` + 0.9 s and
then many times with each runtime drawn from ``sleep`` + [lo, hi] s; the tau between
the undisturbed and each disturbed start order (over the jobs still pending when the
harness predicts) says how far timing alone moves the order. The core is used as a
model of the scheduler here, not as the thing tested: tests/test_fidelity_slurm.py
holds its predictions against the real Slurm.

The snapshot (tests/fixtures/fidelity/harness_snapshot.json) is one that
``bench/fidelity.py --dump`` took on the harness cluster; see its README."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from .fidelity import FILL, KINDS, QUEUE, Kind, kendall_tau

if TYPE_CHECKING:
    from quotatop.collectors.model import Job

SNAPSHOT = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity" / "harness_snapshot.json"

# run_workload releases the held queue once every fill job runs (its poll and
# `scontrol release` take about 1.5 s) and predicts `settle` (3 s) plus about 1.5 s
# of collection later.
RELEASE_AFTER_FILL = 1.5
PREDICT_AFTER_RELEASE = 4.5
# The undisturbed runtime: the sleep plus the launch overhead seen in sacct (0-1 s).
OVERHEAD = 0.9


@dataclass(frozen=True)
class Stability:
    """Tau of disturbed against undisturbed start order, over the draws."""

    lowest: float
    p10: float
    mean: float
    pending: int  # jobs still pending at the prediction (what the fidelity test measures)


class Template:
    """The harness cluster as a snapshot saw it, and one job of each kind to copy."""

    def __init__(self, path: Path = SNAPSHOT) -> None:
        from quotatop.collectors.model import Snapshot
        from quotatop.scheduler_core.site import site_policy

        raw = json.loads(path.read_text())
        snap = msgspec.convert(raw["snapshot"], Snapshot, strict=False)
        kinds: dict[str, str] = raw["kinds"]  # job id -> kind, fill jobs included
        self.jobs = {}
        for job in snap.jobs:
            kind = kinds.get(job.id)
            if kind is not None and kind not in self.jobs:
                self.jobs[kind] = job
        missing = set(KINDS) - set(self.jobs)
        if missing:
            raise ValueError(f"{path}: no job of kind {', '.join(sorted(missing))}")
        # Every node idle: what is in use comes from the jobs played through.
        nodes = [msgspec.structs.replace(n, state="idle", allocated={}, gpus_used_indices=[])
                 for n in snap.nodes]
        self.empty = msgspec.structs.replace(snap, nodes=nodes, jobs=[])
        self.policy = msgspec.structs.replace(site_policy(snap), runtimes="estimate")

    def job(self, kind: str, job_id: str, submit: float, spec: Kind, runtime: float) -> Job:
        return msgspec.structs.replace(
            self.jobs[kind], id=job_id, state="pending", nodes=[], start_time=None,
            end_time=None, submit_time=submit, eligible_time=None, reason=None,
            estimated_start=None, runtime_estimate=runtime,
            time_limit=spec.limit_min * 60.0, constraint=spec.constraint)


def timeline(template: Template, kinds: dict[str, Kind], runtime: Callable[[Kind], float],
             fill: Sequence[str] = FILL, queue: Sequence[str] = QUEUE,
             ) -> tuple[float, dict[str, tuple[float, float]]]:
    """The fill started at 0, the queue released after it: (release time, id ->
    (start, end)). Fill jobs are ``f<n>``, queue jobs ``q<n>`` in list order."""
    from quotatop import scheduler_core

    fill_jobs = [template.job(k, f"f{n}", 0.0, kinds[k], runtime(kinds[k]))
                 for n, k in enumerate(fill)]
    snap = msgspec.structs.replace(template.empty, taken_at=0.0, jobs=fill_jobs)
    first = {p.job_id: p for p in scheduler_core.predict(snap, template.policy, 3600)}
    release = max(first[j.id].start for j in fill_jobs) + RELEASE_AFTER_FILL
    out: dict[str, tuple[float, float]] = {}
    running = []
    for j in fill_jobs:
        start = first[j.id].start
        out[j.id] = (start, start + j.runtime_estimate)
        if start + j.runtime_estimate > release:
            running.append(msgspec.structs.replace(
                j, state="running", start_time=start, nodes=list(first[j.id].nodes)))
    # Submitted held half a minute before the release, as run_workload does.
    queue_jobs = [template.job(k, f"q{n}", release - 30.0, kinds[k], runtime(kinds[k]))
                  for n, k in enumerate(queue)]
    snap = msgspec.structs.replace(template.empty, taken_at=release,
                                   jobs=running + queue_jobs)
    for p in scheduler_core.predict(snap, template.policy, 3600):
        if p.start is not None and p.job_id.startswith("q"):
            j = queue_jobs[int(p.job_id[1:])]
            out[p.job_id] = (p.start, p.start + j.runtime_estimate)
    return release, out


def stability(template: Template, kinds: dict[str, Kind] = KINDS, draws: int = 200,
              jitter: tuple[float, float] = (0.0, 2.0), seed: int = 1) -> Stability:
    """Tau of the start order with runtimes disturbed by ``jitter`` against the
    undisturbed one, over the queue jobs pending at the prediction."""
    rnd = random.Random(seed)
    release, ref = timeline(template, kinds, lambda k: k.sleep + OVERHEAD)
    predicted_at = release + PREDICT_AFTER_RELEASE
    pending = [i for i, (start, _) in ref.items() if i.startswith("q") and start > predicted_at]
    taus = []
    for _ in range(draws):
        _, got = timeline(template, kinds, lambda k: k.sleep + rnd.uniform(*jitter))
        ids = [i for i in pending if i in got and got[i][0] > predicted_at]
        taus.append(kendall_tau([ref[i][0] for i in ids], [got[i][0] for i in ids]))
    taus.sort()
    return Stability(taus[0], taus[len(taus) // 10], sum(taus) / len(taus), len(pending))
