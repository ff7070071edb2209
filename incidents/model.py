"""What a detector reports: an incident that opens and closes at a time."""

from __future__ import annotations

from msgspec import Struct

QUEUE_STORM = "queue_storm"
STARVATION = "starvation"
OVERCOMMIT = "overcommit"
FRAGMENTATION = "fragmentation"
DEADLOCK = "deadlock"
IDLE_GPUS = "idle_gpus"
KINDS = (QUEUE_STORM, STARVATION, OVERCOMMIT, FRAGMENTATION, DEADLOCK, IDLE_GPUS)


class Incident(Struct, kw_only=True, omit_defaults=True):
    kind: str
    opened_at: float
    closed_at: float | None = None  # None: still open at the last snapshot seen
    teams: list[str] = []
    jobs: list[str] = []
    summary: str = ""
    severity: str = "warning"  # info | warning | critical
    suggestion: str | None = None
    details: dict[str, float | str] = {}
