"""Idle GPUs: a running job holding GPUs it barely uses (Snapshot.gpu_util, from the GPU
exporter joined to the jobs: collectors/gpu_util.py). Read-only: it names the job, its
user, its GPUs and the idle time's cost; what to do about it is people's."""

from __future__ import annotations

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import ACTIVE_STATES, Snapshot
from quotatop.incidents.config import IdleGpusConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import IDLE_GPUS, Incident

# A window measured by the source may be a clock tick short of the configured one.
_SLACK = 1.0


class IdleGpusDetector:
    kind = IDLE_GPUS

    def __init__(self, config: IdleGpusConfig) -> None:
        self.cfg = config
        self.episodes = Episodes()

    def feed(self, snap: Snapshot) -> None:
        cfg = self.cfg
        running = {j.id: j for j in snap.jobs if j.state in ACTIVE_STATES}
        active: dict[object, Incident] = {}
        for u in snap.gpu_util:
            job = running.get(u.job)
            if job is None or job.start_time is None or u.mean_util_percent is None:
                continue
            # The whole window held and measured: a job that started 10 minutes ago, or a
            # window shorter than the configured one, says nothing of the last hour.
            if (u.until - u.since < cfg.window - _SLACK
                    or u.until - job.start_time < cfg.window - _SLACK):
                continue
            if (u.allocated_gpu_seconds <= 0
                    or u.observed_gpu_seconds < cfg.min_coverage * u.allocated_gpu_seconds):
                continue
            if u.mean_util_percent >= cfg.max_util:
                continue
            idle_hours = (u.observed_gpu_seconds - u.busy_gpu_seconds) / 3600.0
            cost = None if cfg.gpu_hour_price is None else idle_hours * cfg.gpu_hour_price
            n = len(u.gpus)
            priced = "" if cost is None else f", cost {cost:.2f}"
            details: dict[str, float | str] = {
                "user": u.user, "gpus": ",".join(u.gpus), "mean_util_percent":
                u.mean_util_percent, "idle_gpu_hours": idle_hours,
                "window": u.until - u.since}
            if cost is not None:
                details["cost"] = cost
            active[u.job] = Incident(
                kind=IDLE_GPUS, opened_at=snap.taken_at, teams=[u.team] if u.team else [],
                jobs=[u.job],
                summary=(f"job {u.job} ({u.user or '?'}) holds {n} GPU{'s' * (n != 1)} "
                         f"({', '.join(u.gpus[:4])}{', ...' if n > 4 else ''}) at "
                         f"{u.mean_util_percent:.0f}% over the last "
                         f"{human_duration(u.until - u.since)}: {idle_hours:.1f} idle "
                         f"GPU-hours{priced}")[:300],
                suggestion=(f"below {cfg.max_util:g}% for the whole window: ask "
                            f"{u.user or 'its owner'} whether the job still needs its GPUs"),
                details=details)
        self.episodes.update(snap.taken_at, active)

    def finish(self) -> list[Incident]:
        return self.episodes.finish()
